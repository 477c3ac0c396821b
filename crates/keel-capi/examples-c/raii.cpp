// libkeel from C++ through a small RAII wrapper that lives in this example,
// not in the library: handles own their libkeel objects, errors become
// exceptions, and a lambda becomes a loop body (an exception inside the
// body is caught in the trampoline, since nothing may unwind into libkeel,
// and rethrown after the loop).
//
//   raii FILE PUS SPEC   (FILE: one "load [current_pu]" per line)
//
// Prints "dest <task> <pu>" per task, runs a loop whose per-iteration
// counters must all be 1, and prints "all ok".
#include <atomic>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "keel.h"

namespace keel {

struct error : std::runtime_error {
    keel_status status;
    error(const char *what, keel_status s)
        : std::runtime_error(std::string(what) + ": " + keel_status_name(int(s)) + ": " +
                             keel_last_error_message()),
          status(s) {}
};

inline void check(const char *what, keel_status s) {
    if (s != KEEL_OK) throw error(what, s);
}

class Result {
    std::unique_ptr<keel_map_result, decltype(&keel_result_free)> r_;

  public:
    explicit Result(keel_map_result *r) : r_(r, &keel_result_free) {}
    std::vector<int64_t> destinations() const {
        size_t n = 0;
        const int64_t *d = keel_result_destinations(r_.get(), &n);
        return std::vector<int64_t>(d, d + n);
    }
    keel_map_metrics metrics() const {
        keel_map_metrics m;
        check("keel_result_metrics", keel_result_metrics(r_.get(), &m));
        return m;
    }
};

class Mapper {
    std::unique_ptr<keel_mapper, decltype(&keel_mapper_free)> m_;

  public:
    explicit Mapper(const std::string &spec) : m_(nullptr, &keel_mapper_free) {
        keel_status s;
        m_.reset(keel_mapper_new(spec.c_str(), &s));
        if (!m_) throw error("keel_mapper_new", s);
    }
    void set(const std::string &key, const std::string &value) {
        check("keel_mapper_set_param", keel_mapper_set_param(m_.get(), key.c_str(), value.c_str()));
    }
    Result map(const std::vector<double> &loads, size_t pus,
               const std::vector<int64_t> *current = nullptr) const {
        keel_map_input in = {};
        in.task_loads = loads.data();
        in.num_tasks = loads.size();
        in.num_pus = pus;
        if (current) {
            in.current_pu = current->data();
            in.num_current_pu = current->size();
        }
        keel_map_result *r = nullptr;
        check("keel_map", keel_map(m_.get(), &in, &r));
        return Result(r);
    }
};

class Pool {
    std::unique_ptr<keel_pool, decltype(&keel_pool_free)> p_;

    template <class F> struct Call {
        F &f;
        std::atomic<bool> failed{false};
        std::exception_ptr caught;  // written by the first thread that fails
    };
    template <class F> static int trampoline(int64_t b, int64_t e, size_t t, void *ctx) {
        auto *call = static_cast<Call<F> *>(ctx);
        try {
            call->f(b, e, t);
            return 0;
        } catch (...) {
            if (!call->failed.exchange(true)) call->caught = std::current_exception();
            return 1;
        }
    }

  public:
    explicit Pool(size_t threads = 0) : p_(nullptr, &keel_pool_free) {
        keel_status s;
        p_.reset(keel_pool_new(threads, &s));
        if (!p_) throw error("keel_pool_new", s);
    }
    size_t threads() const { return keel_pool_threads(p_.get()); }
    // f(begin, end, thread) for every chunk of [begin, end).
    template <class F>
    keel_loop_stats parallel_for(const char *id, int64_t begin, int64_t end, const char *schedule, F f) {
        Call<F> call{f, {false}, nullptr};
        keel_loop_stats stats;
        keel_status s = keel_parallel_for_id(p_.get(), id, begin, end, schedule, KEEL_LOOP_RECORDED,
                                             &trampoline<F>, &call, &stats);
        if (call.caught) std::rethrow_exception(call.caught);
        check("keel_parallel_for_id", s);
        return stats;
    }
};

}  // namespace keel

int main(int argc, char **argv) {
    if (argc < 4) {
        std::cerr << "usage: " << argv[0] << " FILE PUS SPEC\n";
        return 2;
    }
    try {
        std::ifstream in(argv[1]);
        std::vector<double> loads;
        std::vector<int64_t> current;
        bool have_current = false;
        for (std::string line; std::getline(in, line);) {
            std::istringstream fields(line);
            double load;
            if (!(fields >> load)) continue;
            long long pu = -1;
            if (fields >> pu) have_current = true;
            loads.push_back(load);
            current.push_back(pu);
        }
        keel::Mapper mapper(argv[3]);
        keel::Result result = mapper.map(loads, std::stoul(argv[2]), have_current ? &current : nullptr);
        std::vector<int64_t> dest = result.destinations();
        for (size_t t = 0; t < dest.size(); t++) std::cout << "dest " << t << " " << dest[t] << "\n";
        std::cout << "lambda=" << result.metrics().lambda << "\n";

        keel::Pool pool(2);
        const int64_t n = 5000;
        std::vector<std::atomic<unsigned>> hits(n);
        keel_loop_stats stats = pool.parallel_for("raii/count", 0, n, "dynamic,3", [&](int64_t b, int64_t e, size_t) {
            for (int64_t i = b; i < e; i++) hits[i]++;
        });
        for (auto &h : hits)
            if (h != 1) throw std::runtime_error("an iteration did not run exactly once");
        if (stats.iterations != uint64_t(n)) throw std::runtime_error("wrong iteration count");
        // An exception in the body comes back out of parallel_for, and the
        // pool runs the next loop.
        bool thrown = false;
        try {
            pool.parallel_for("raii/throw", 0, n, "dynamic,1", [&](int64_t b, int64_t, size_t) {
                if (b == n / 2) throw std::out_of_range("half way");
            });
        } catch (const std::out_of_range &) {
            thrown = true;
        }
        if (!thrown) throw std::runtime_error("the body's exception was lost");
        pool.parallel_for("raii/after", 0, 10, "static", [](int64_t, int64_t, size_t) {});
        // A bad spec is an exception, not a crash.
        try {
            keel::Mapper bad("hier:nodes=");
            return 1;
        } catch (const keel::error &e) {
            if (e.status != KEEL_ERR_SPEC) return 1;
        }
        std::cout << "all ok\n";
    } catch (const std::exception &e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
    return 0;
}
