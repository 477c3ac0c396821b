//! Every process's end, reported in the order the kernel saw the ends.
//!
//! A job's failure is the rank that ended first with an error (a rank
//! whose peer died usually fails right after it), so the instants the
//! ends are stamped with must keep their order. One waiting thread per
//! process cannot promise that: each stamps the instant its own wait
//! returned, and on a loaded machine the thread of the rank that died
//! first may run after the thread of the rank that died of it. Here one
//! thread waits on every process's pidfd in one epoll set: the kernel
//! queues a pidfd on the set's ready list when its process ends and
//! `epoll_wait` hands the ready ones out in that order, so the instants
//! stamped one after another keep the kernel's order however late the
//! thread runs. A machine's node managers share one [`ExitWatch`], so
//! ranks on different nodes of it are ordered too.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use keel_policy::cosched::JobId;

use super::NodeMsg;

/// The epoll token of the stop event; processes' tokens start above it.
const STOP: u64 = 0;

/// Ready pidfds taken per `epoll_wait`.
const BATCH: usize = 64;

/// One watched process: where its end goes.
struct Watched {
    /// Kept open while watched: the epoll set refers to it.
    pidfd: OwnedFd,
    inbox: Sender<NodeMsg>,
    job: JobId,
    rank: usize,
}

type WatchedSet = Arc<Mutex<HashMap<u64, Watched>>>;

/// Watches processes' pidfds on one thread and sends each end as
/// [`NodeMsg::Exited`] to the node manager that asked, stamped in the
/// order the processes ended. Dropping it stops the thread.
pub struct ExitWatch {
    epoll: OwnedFd,
    stop: OwnedFd,
    watched: WatchedSet,
    next_token: AtomicU64,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ExitWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let watched = self
            .watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("ExitWatch")
            .field("watched", &watched)
            .finish()
    }
}

impl ExitWatch {
    /// Starts the watching thread.
    pub fn start() -> io::Result<ExitWatch> {
        // SAFETY: integers in, a new descriptor (or -1) out.
        let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epoll < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor to us alone.
        let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
        // SAFETY: integers in, a new descriptor (or -1) out.
        let stop = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if stop < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor to us alone.
        let stop = unsafe { OwnedFd::from_raw_fd(stop) };
        add(epoll.as_raw_fd(), stop.as_raw_fd(), STOP)?;
        let watched: WatchedSet = Arc::default();
        let thread = {
            let (epoll, watched) = (epoll.as_raw_fd(), Arc::clone(&watched));
            std::thread::Builder::new()
                .name("keel-exits".into())
                .spawn(move || serve(epoll, &watched))?
        };
        Ok(ExitWatch {
            epoll,
            stop,
            watched,
            next_token: AtomicU64::new(STOP + 1),
            thread: Some(thread),
        })
    }

    /// Watches the process `pidfd` names (a child or not): once it has
    /// ended, [`NodeMsg::Exited`] for `(job, rank)` goes to `inbox`.
    pub fn watch(
        &self,
        pidfd: OwnedFd,
        inbox: Sender<NodeMsg>,
        job: JobId,
        rank: usize,
    ) -> io::Result<()> {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let fd = pidfd.as_raw_fd();
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        // In the set before the kernel can report it: the thread looks the
        // token up under this lock.
        watched.insert(
            token,
            Watched {
                pidfd,
                inbox,
                job,
                rank,
            },
        );
        if let Err(e) = add(self.epoll.as_raw_fd(), fd, token) {
            watched.remove(&token);
            return Err(e);
        }
        Ok(())
    }
}

impl Drop for ExitWatch {
    fn drop(&mut self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: eight bytes from a live buffer to our own eventfd.
        let _ = unsafe { libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Adds `fd` to the epoll set `epoll`, readable, under `token`.
fn add(epoll: RawFd, fd: RawFd, token: u64) -> io::Result<()> {
    let mut event = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: token,
    };
    // SAFETY: both descriptors are open; `event` lives across the call.
    if unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd, &mut event) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The thread: each ready pidfd, in the kernel's order, becomes one
/// `Exited` stamped when it is handed on, until the stop event.
fn serve(epoll: RawFd, watched: &WatchedSet) {
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; BATCH];
    loop {
        // SAFETY: `events` holds BATCH entries for the kernel to fill; the
        // epoll descriptor outlives this thread (its owner joins it).
        let n = unsafe { libc::epoll_wait(epoll, events.as_mut_ptr(), BATCH as i32, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        for event in &events[..n as usize] {
            // A copy: the struct is packed on some targets.
            let token = { event.u64 };
            if token == STOP {
                return;
            }
            let ended = watched
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&token);
            let Some(w) = ended else { continue };
            // SAFETY: both descriptors are open; a null event is allowed
            // for a deletion.
            unsafe {
                libc::epoll_ctl(
                    epoll,
                    libc::EPOLL_CTL_DEL,
                    w.pidfd.as_raw_fd(),
                    std::ptr::null_mut(),
                )
            };
            let _ = w.inbox.send(NodeMsg::Exited {
                job: w.job,
                rank: w.rank,
                at: Instant::now(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};
    use std::sync::mpsc;
    use std::time::Duration;

    fn sleeper() -> Child {
        Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts")
    }

    fn exited(rx: &mpsc::Receiver<NodeMsg>) -> (usize, Instant) {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(NodeMsg::Exited { rank, at, .. }) => (rank, at),
            Ok(_) => panic!("not an exit"),
            Err(e) => panic!("no exit reported: {e}"),
        }
    }

    /// Waits until `child` is a zombie: ended, not yet reaped.
    fn until_ended(child: &Child) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while crate::sys::proc_state(child.id() as crate::sys::Pid) != Some('Z') {
            assert!(Instant::now() < deadline, "the child did not end");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn ends_are_reported_in_the_order_they_happened_even_when_the_thread_runs_late() {
        let watch = ExitWatch::start().expect("exit watch");
        let (tx, rx) = mpsc::channel();
        for round in 0..10 {
            let mut a = sleeper();
            let mut b = sleeper();
            for (rank, child) in [(0, &a), (1, &b)] {
                let pidfd = crate::sys::pidfd_open(child.id() as crate::sys::Pid).unwrap();
                watch.watch(pidfd, tx.clone(), round, rank).unwrap();
            }
            // The thread cannot hand anything on while the set is held:
            // both processes end before it runs, the second-started first
            // on even rounds.
            let (first, second) = if round % 2 == 0 {
                (&mut b, &mut a)
            } else {
                (&mut a, &mut b)
            };
            let held = watch.watched.lock().unwrap();
            first.kill().unwrap();
            until_ended(first);
            second.kill().unwrap();
            until_ended(second);
            drop(held);
            let (r1, t1) = exited(&rx);
            let (r2, t2) = exited(&rx);
            let expected_first = if round % 2 == 0 { 1 } else { 0 };
            assert_eq!(
                (r1, r2),
                (expected_first, 1 - expected_first),
                "round {round}"
            );
            assert!(t1 < t2, "round {round}: the instants keep the order");
            a.wait().unwrap();
            b.wait().unwrap();
        }
    }

    #[test]
    fn every_end_is_reported_once_when_threads_watch_at_the_same_time() {
        let watch = Arc::new(ExitWatch::start().expect("exit watch"));
        let (tx, rx) = mpsc::channel();
        let (threads, each): (u64, usize) = (4, 50);
        let watchers: Vec<_> = (0..threads)
            .map(|t| {
                let (watch, tx) = (Arc::clone(&watch), tx.clone());
                std::thread::spawn(move || {
                    let mut children = Vec::new();
                    for i in 0..each {
                        let child = Command::new("true").spawn().expect("true starts");
                        let pidfd = crate::sys::pidfd_open(child.id() as crate::sys::Pid).unwrap();
                        watch.watch(pidfd, tx.clone(), t, i).unwrap();
                        children.push(child);
                    }
                    children
                })
            })
            .collect();
        let mut children = Vec::new();
        for w in watchers {
            children.extend(w.join().unwrap());
        }
        let mut seen = std::collections::BTreeSet::new();
        let total = threads as usize * each;
        for _ in 0..total {
            match rx.recv_timeout(Duration::from_secs(20)) {
                Ok(NodeMsg::Exited { job, rank, .. }) => {
                    assert!(seen.insert((job, rank)), "({job}, {rank}) twice");
                }
                Ok(_) => panic!("not an exit"),
                Err(e) => panic!("only {} of {total} ends reported: {e}", seen.len()),
            }
        }
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        assert!(watch.watched.lock().unwrap().is_empty());
        for mut child in children {
            child.wait().unwrap();
        }
    }

    #[test]
    fn a_process_that_ended_before_it_was_watched_is_reported_at_once() {
        let watch = ExitWatch::start().expect("exit watch");
        let (tx, rx) = mpsc::channel();
        let mut child = Command::new("true").spawn().unwrap();
        until_ended(&child);
        let pidfd = crate::sys::pidfd_open(child.id() as crate::sys::Pid).unwrap();
        watch.watch(pidfd, tx, 7, 3).unwrap();
        assert_eq!(exited(&rx).0, 3);
        child.wait().unwrap();
    }

    #[test]
    fn dropping_the_watch_stops_its_thread_with_processes_still_watched() {
        let watch = ExitWatch::start().expect("exit watch");
        let (tx, _rx) = mpsc::channel();
        let mut child = sleeper();
        let pidfd = crate::sys::pidfd_open(child.id() as crate::sys::Pid).unwrap();
        watch.watch(pidfd, tx, 1, 0).unwrap();
        let started = Instant::now();
        drop(watch);
        assert!(started.elapsed() < Duration::from_secs(5));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
