//! Starting one job process: its page, stderr file and cgroup, the fork
//! and what the child does before `exec`, its guardian and the watch on its end.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use super::{Handle, Launch, NodeManager, Owner, Proc, JOB_ENV};
use crate::bsp::{RANK_ENV, RENDEZVOUS_ENV, SIZE_ENV};
use crate::guardian::{Guarded, Guardian};
use crate::rundir;
use crate::shm::{Page, PAGE_ENV};
use crate::sys::{self, CpuSet, Pid};

impl NodeManager {
    /// Starts one process as `l` says; its pid, or why it did not start.
    pub(super) fn start(&mut self, l: Launch) -> Result<Pid, String> {
        let Some(&cpu) = self.cfg.cpus.get(l.pe) else {
            return Err(format!("node {} has no PE {}", self.cfg.id, l.pe));
        };
        let cpuset = CpuSet::of(&[cpu]).ok_or(format!("CPU {cpu} is out of range"))?;
        let me = Owner {
            uid: sys::geteuid(),
            gid: sys::getgid(),
        };
        let foreign = l.owner.uid != me.uid;
        let page = Page::create(&l.page, foreign.then_some((l.owner.uid, l.owner.gid)))
            .map_err(|e| e.to_string())?;
        let cgroup = self
            .suspender
            .prepare(l.job, l.rank)
            .map_err(|e| format!("cannot create the process's cgroup: {e}"))?;
        // Never an existing file or a planted symlink (see `rundir`).
        let stderr = rundir::create_private_file(&l.stderr, foreign.then_some(l.owner))
            .map_err(|e| format!("cannot create {}: {e}", l.stderr.display()))?;
        let (program, args) = l.command.split_first().ok_or("empty command")?;
        let parent = sys::getpid();
        let owner = l.owner;
        let pdeathsig = self.cfg.pdeathsig;
        let enter = cgroup.as_ref().map(|c| c.procs.clone());
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env(PAGE_ENV, &l.page)
            .env(RANK_ENV, l.rank.to_string())
            .env(SIZE_ENV, l.size.to_string())
            .env(RENDEZVOUS_ENV, &l.rendezvous)
            .env(JOB_ENV, l.job.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        // SAFETY: the closure runs in the child between fork and exec and
        // only makes async-signal-safe system calls on values moved into
        // it (integers, a CpuSet, a CString); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                // Lead a session (and so a process group) of its own:
                // suspension with signals and the guardian address the
                // group, so that what the process forks stops, continues
                // and dies with it; ranks of one job are suspended
                // independently, so each has its own. A session rather than
                // just a group: a group in the manager's session would be
                // orphaned by the manager's death, and the kernel then
                // sends SIGHUP to a stopped group, killing a job the
                // guardian is to resume.
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                cpuset.apply(0)?;
                if pdeathsig {
                    libc::prctl(
                        libc::PR_SET_PDEATHSIG,
                        libc::SIGKILL as libc::c_ulong,
                        0,
                        0,
                        0,
                    );
                    // The manager may have died before the prctl.
                    if libc::getppid() != parent {
                        return Err(io::Error::from_raw_os_error(libc::ESRCH));
                    }
                }
                if let Some(procs) = &enter {
                    crate::suspend::write_raw(procs, b"0")?;
                }
                if owner.uid != libc::geteuid()
                    && (libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(owner.gid) != 0
                        || libc::setuid(owner.uid) != 0)
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
        let pid = child.id() as Pid;
        page.set_pid(pid as u32);
        // What a dead manager would leave of this process: its page, its
        // stderr file and rendezvous socket, then (once empty) the
        // rendezvous, job and run directories.
        let socket = l.rendezvous.join(format!("r{}.sock", l.rank));
        let mut dirs: Vec<&std::path::Path> = vec![&l.rendezvous];
        for d in l.stderr.ancestors().skip(1).take(2) {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
        let guardian = Guardian::spawn(
            Guarded {
                pid,
                group_leader: true,
                on_exit: self.cfg.on_manager_exit,
            },
            cgroup.as_ref(),
            &[&l.page, &l.stderr, &socket],
            &dirs,
        );
        let watched = sys::pidfd_open(pid)
            .and_then(|pidfd| self.exits.watch(pidfd, self.inbox.clone(), l.job, l.rank));
        let mut proc = Proc::new(
            (l.job, l.rank, l.pe),
            pid,
            Handle::Child(child),
            page,
            cgroup,
            Some(l.stderr.clone()),
        );
        // Without a guardian or a watch on its end the process could
        // outlive us or never be seen to end: do not run it. The guardian
        // is handed to the process first, so that killing and reaping it
        // dismisses the guardian (a dropped one would act as if the manager
        // had died).
        let why = match (guardian, watched) {
            (Ok(g), Ok(())) => {
                proc.guardian = Some(g);
                None
            }
            (Ok(g), Err(e)) => {
                proc.guardian = Some(g);
                Some(format!("cannot watch the process's end: {e}"))
            }
            (Err(e), _) => Some(format!("cannot start the guardian: {e}")),
        };
        if let Some(why) = why {
            drop(proc); // kills and reaps
            return Err(why);
        }
        self.procs.insert((l.job, l.rank), proc);
        Ok(pid)
    }
}
