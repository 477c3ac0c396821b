//! Thin, checked wrappers over the Linux system calls the daemons use.
//!
//! Everything `unsafe` in the crate that is not about the shared page or the
//! guardian's post-`fork` code lives here, each call with its own
//! `// SAFETY:` note, so the managers above read as ordinary Rust.
//!
//! Reading clocks and identities:
//!
//! ```
//! use keel_cosched::sys;
//! let t0 = sys::monotonic_ns();
//! assert!(sys::monotonic_ns() >= t0);
//! assert_eq!(sys::getpid() as u32, std::process::id());
//! assert!(!sys::allowed_cpus().unwrap().is_empty());
//! ```

pub(crate) mod deadline;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Who a job's processes run as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Owner {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

/// Process id type of the kernel.
pub type Pid = libc::pid_t;

/// Reads one of the kernel's clocks in nanoseconds.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here
    // exist on every Linux the crate supports, and a failure leaves `ts`
    // zeroed, which the callers treat as "no time passed".
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// CPU time of the calling process (all threads), ns: what the page's
/// `cpu_ns` carries.
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The monotonic clock, ns.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The real user id of the calling process.
pub fn getuid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory of ours.
    unsafe { libc::getuid() }
}

/// The real group id of the calling process.
pub fn getgid() -> u32 {
    // SAFETY: getgid cannot fail and touches no memory of ours.
    unsafe { libc::getgid() }
}

/// The effective user id of the calling process.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// The calling process's id.
pub fn getpid() -> Pid {
    // SAFETY: getpid cannot fail and touches no memory of ours.
    unsafe { libc::getpid() }
}

/// Turns a `-1` return into the thread's `errno`.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: Pid, sig: libc::c_int) -> io::Result<()> {
    if pid <= 0 {
        // kill(0, ..) and kill(-1, ..) address groups or everyone: never
        // what a caller holding a process id means.
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    // SAFETY: plain system call on integers; `pid > 0` names one process.
    check(unsafe { libc::kill(pid, sig) }).map(drop)
}

/// Sends `sig` to every process of group `pgid`.
pub fn killpg(pgid: Pid, sig: libc::c_int) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    // SAFETY: plain system call on integers; `pgid > 1` names one group.
    check(unsafe { libc::killpg(pgid, sig) }).map(drop)
}

/// A CPU set built outside of any `fork`/`exec` window, so that the child
/// side only makes the system call.
#[derive(Clone, Copy)]
pub struct CpuSet(libc::cpu_set_t);

impl CpuSet {
    /// The set holding exactly `cpus`; `None` if one is beyond the kernel's
    /// `CPU_SETSIZE`.
    pub fn of(cpus: &[usize]) -> Option<CpuSet> {
        // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus {
            if cpu >= libc::CPU_SETSIZE as usize {
                return None;
            }
            // SAFETY: `cpu` is below CPU_SETSIZE, checked above.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        Some(CpuSet(set))
    }

    /// Pins process (or thread) `pid`, 0 meaning the caller, to the set.
    /// Async-signal-safe: one system call on memory the caller owns.
    pub fn apply(&self, pid: Pid) -> io::Result<()> {
        // SAFETY: `self.0` is a valid cpu_set_t of the size passed.
        check(unsafe {
            libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &self.0)
        })
        .map(drop)
    }
}

/// The CPUs the calling thread may run on, in increasing order.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: all-zero is a valid empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is writable and of the size passed.
    check(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET only reads the set; the index is in range.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Sets the nice value of one thread (Linux applies `PRIO_PROCESS` to the
/// thread whose id is given).
pub fn set_nice(tid: Pid, nice: i32) -> io::Result<()> {
    // SAFETY: plain system call on integers.
    check(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) }).map(drop)
}

/// Sets the nice value of every thread of process `pid` (read from
/// `/proc/<pid>/task`); a process with threads would otherwise only have
/// its main thread boosted.
pub fn set_process_nice(pid: Pid, nice: i32) -> io::Result<()> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
    let Ok(tasks) = tasks else {
        return set_nice(pid, nice);
    };
    let mut result = Ok(());
    for entry in tasks.flatten() {
        if let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<Pid>().ok())
        {
            match set_nice(tid, nice) {
                // A thread that exited meanwhile is not an error.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => result = Err(e),
                Ok(()) => {}
            }
        }
    }
    result
}

/// Puts the calling thread in `SCHED_FIFO` at `priority`, so that it wakes
/// on time for a slot switch even with every CPU busy.
///
/// With `SCHED_RESET_ON_FORK`: the job processes, guardians and threads it
/// creates start under `SCHED_OTHER`. Without it a polling job process
/// would inherit the real-time class and starve the managers themselves.
pub fn set_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param; 0 names the calling thread.
    check(unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    })
    .map(drop)
}

/// Puts the calling thread back under `SCHED_OTHER`, nice 0.
pub fn set_normal_scheduling() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param; 0 names the calling thread;
    // failure leaves the policy as it was.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
}

/// Sets the calling thread's timer slack (ns), so that sleeps until a slot
/// switch end within a few microseconds instead of the default 50 µs.
pub fn set_timer_slack(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory;
    // failure only leaves the default slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// The state letter of `/proc/<pid>/stat` (`R`, `S`, `T`, `Z`, ...), or
/// `None` when the process does not exist.
pub fn proc_state(pid: Pid) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself hold spaces or
    // parentheses: the state follows the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next()?.chars().next()
}

/// The credentials of the process at the other end of a Unix socket,
/// as the kernel recorded them at `connect` time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCred {
    /// The peer's process id.
    pub pid: Pid,
    /// Its effective user id.
    pub uid: u32,
    /// Its effective group id.
    pub gid: u32,
}

/// `SO_PEERCRED` of a connected Unix socket.
pub fn peer_cred(fd: &impl AsRawFd) -> io::Result<PeerCred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are writable and `len` is cred's size.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    })?;
    Ok(PeerCred {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
    })
}

/// A path as a C string; paths with interior NULs are rejected.
pub fn cpath(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("path {} holds a NUL byte", path.display()),
        )
    })
}

/// Opens `pidfd_open(pid)`: a handle that names this very process even
/// after its id is reused.
pub fn pidfd_open(pid: Pid) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes integers and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Sends `sig` to the process a pidfd names (never to a process that
/// reused its id).
pub fn pidfd_send_signal(pidfd: &impl AsRawFd, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: integers and a descriptor we hold; no memory is passed.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            0usize,
            0u32,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Signals that end a process by default and that a resource manager sends
/// to cancel a job (`SIGHUP`, `SIGINT`, `SIGQUIT`, `SIGTERM`, `SIGUSR1`,
/// `SIGUSR2`, `SIGXCPU`, `SIGKILL`), as a mask of `1 << (sig - 1)`.
pub const ENDING_SIGNALS: u64 = 1 << (libc::SIGHUP - 1)
    | 1 << (libc::SIGINT - 1)
    | 1 << (libc::SIGQUIT - 1)
    | 1 << (libc::SIGTERM - 1)
    | 1 << (libc::SIGUSR1 - 1)
    | 1 << (libc::SIGUSR2 - 1)
    | 1 << (libc::SIGXCPU - 1)
    | 1 << (libc::SIGKILL - 1);

/// The signals pending for process `pid` (its own and its thread group's,
/// `SigPnd | ShdPnd` of `/proc/<pid>/status`), or `None` when it is gone
/// or the file cannot be read.
pub fn pending_signals(pid: Pid) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mut mask = 0u64;
    for line in status.lines() {
        if let Some(hex) = line
            .strip_prefix("SigPnd:")
            .or_else(|| line.strip_prefix("ShdPnd:"))
        {
            mask |= u64::from_str_radix(hex.trim(), 16).ok()?;
        }
    }
    Some(mask)
}

/// A pipe whose two ends close on `exec`.
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Waits for a child by id and reaps it, retrying on `EINTR`.
pub fn waitpid_blocking(pid: Pid) -> io::Result<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is writable; a positive id names one child.
        let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
        match check(ret) {
            Ok(_) => return Ok(status),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Changes the owner of an open file.
pub fn fchown(fd: &impl AsRawFd, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: plain system call on a descriptor the caller keeps open.
    check(unsafe { libc::fchown(fd.as_raw_fd(), uid, gid) }).map(drop)
}

/// Changes the owner of a path.
pub fn chown(path: &Path, uid: u32, gid: u32) -> io::Result<()> {
    let c = cpath(path)?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    check(unsafe { libc::chown(c.as_ptr(), uid, gid) }).map(drop)
}

/// Busy CPU time (everything but idle and iowait) of `cpus` since boot,
/// ns, from `/proc/stat`; `None` if it cannot be read.
pub fn cpu_busy_ns(cpus: &[usize]) -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    // SAFETY: sysconf takes an integer and reads no memory of ours.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 {
        return None;
    }
    let mut total = 0u64;
    for &cpu in cpus {
        let tag = format!("cpu{cpu} ");
        let line = stat.lines().find(|l| l.starts_with(&tag))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal ...
        let busy: u64 = f
            .iter()
            .take(8)
            .enumerate()
            .filter(|(i, _)| *i != 3 && *i != 4)
            .map(|(_, v)| v)
            .sum();
        total += busy;
    }
    Some(total.saturating_mul(1_000_000_000) / hz as u64)
}

/// User + system CPU time of this process (`RUSAGE_SELF`) or of its
/// reaped children (`RUSAGE_CHILDREN`), ns.
pub fn rusage_ns(who: libc::c_int) -> u64 {
    // SAFETY: an all-zero rusage is valid for getrusage to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is writable; `who` is one of the two documented values.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_state_reads_this_process() {
        assert!(matches!(proc_state(getpid()), Some('R' | 'S')));
        assert_eq!(proc_state(i32::MAX), None);
    }

    #[test]
    fn kill_refuses_group_addresses() {
        assert!(kill(0, 0).is_err());
        assert!(kill(-1, 0).is_err());
        assert!(killpg(1, 0).is_err());
    }

    #[test]
    fn cpu_clocks_advance_with_work() {
        let t0 = thread_cpu_ns();
        let mut x = 0u64;
        while thread_cpu_ns() - t0 < 2_000_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(process_cpu_ns() >= thread_cpu_ns());
    }

    #[test]
    fn busy_time_and_rusage_read() {
        let cpus = allowed_cpus().unwrap();
        assert!(cpu_busy_ns(&cpus).unwrap() > 0);
        assert!(rusage_ns(libc::RUSAGE_SELF) > 0);
        assert!(cpu_busy_ns(&[100_000]).is_none());
    }

    #[test]
    fn cpu_set_rejects_out_of_range() {
        assert!(CpuSet::of(&[0]).is_some());
        assert!(CpuSet::of(&[libc::CPU_SETSIZE as usize]).is_none());
    }
}
