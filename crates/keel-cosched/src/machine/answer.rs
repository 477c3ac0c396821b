//! The manager's answers to control requests, and its final report.

use super::*;

impl Manager<'_> {
    pub(super) fn control(&mut self, req: ControlRequest) {
        let reply = self.answer(&req);
        let _ = req.reply.send(reply);
    }

    pub(super) fn answer(&mut self, req: &ControlRequest) -> String {
        let peer = req.peer;
        let job_of = |mm: &Self, id: JobId| -> Result<(), String> {
            let j = mm.jobs.get(&id).ok_or(format!("error: no job {id}"))?;
            control::authorize(peer.uid, j.owner.uid).map_err(|e| format!("error: {e}"))
        };
        match &req.command {
            ControlCommand::List => {
                let mut lines = vec!["ok".to_string()];
                for id in &self.order {
                    let j = &self.jobs[id];
                    if j.owner.uid == peer.uid {
                        lines.push(self.describe(j));
                    }
                }
                lines.join("\n")
            }
            ControlCommand::Status(id) => match job_of(self, *id) {
                Ok(()) => format!("ok\n{}", self.describe(&self.jobs[id])),
                Err(e) => e,
            },
            ControlCommand::Kill(id) => match job_of(self, *id) {
                Ok(()) => {
                    let j = self.jobs.get_mut(id).expect("checked");
                    if j.phase == Phase::Done {
                        return format!("error: job {id} has already ended");
                    }
                    if j.outcome.is_none() {
                        j.outcome = Some(JobOutcome::Killed { by_uid: peer.uid });
                    }
                    self.end_job(*id);
                    format!("ok killing job {id}")
                }
                Err(e) => e,
            },
            ControlCommand::Submit(line) => {
                let me = sys::geteuid();
                if me != 0 && peer.uid != me {
                    return format!(
                        "error: permission denied: this daemon runs as uid {me} and cannot run jobs for uid {}",
                        peer.uid
                    );
                }
                // Parsing bounds every field; the fit to this machine and the
                // number of live jobs are checked before `submit` allocates.
                let pes = self.m.pes();
                let parsed = JobSpec::parse_line(line).and_then(|s| s.check_fits(pes).map(|()| s));
                match parsed {
                    Ok(spec) => {
                        if self
                            .jobs
                            .values()
                            .any(|j| j.spec.name == spec.name && j.phase != Phase::Done)
                        {
                            return format!("error: a job named `{}` is still running", spec.name);
                        }
                        let live = self
                            .jobs
                            .values()
                            .filter(|j| j.phase != Phase::Done)
                            .count();
                        if live >= control::MAX_LIVE_JOBS {
                            return format!(
                                "error: {live} jobs have not ended, the limit of {} (MAX_LIVE_JOBS); try again later",
                                control::MAX_LIVE_JOBS
                            );
                        }
                        let id = self.submit(
                            spec,
                            Owner {
                                uid: peer.uid,
                                gid: peer.gid,
                            },
                        );
                        format!("ok submitted job {id}")
                    }
                    Err(e) => format!("error: {e}"),
                }
            }
            ControlCommand::Shutdown => {
                if peer.uid != sys::getuid() {
                    return format!(
                        "error: permission denied: only uid {} (the daemon's user) may shut it down",
                        sys::getuid()
                    );
                }
                self.stop_all();
                "ok shutting down".into()
            }
        }
    }

    pub(super) fn describe(&self, j: &JobState) -> String {
        // An ended job shows how it ended, as the final report does.
        let phase = match j.phase {
            Phase::Future | Phase::Queued => "waiting",
            Phase::Running => "running",
            Phase::Ending => "ending",
            Phase::Done => j.outcome.as_ref().map_or("stopped", JobOutcome::kind),
        };
        let pids: Vec<String> = j
            .ranks
            .iter()
            .map(|r| match r {
                RankState::Running(p) => p.to_string(),
                _ => "-".into(),
            })
            .collect();
        let classes: Vec<&str> = j.classes.iter().map(|c| c.as_str()).collect();
        format!(
            "{} {} {} ranks={} pids={} classes={}",
            j.id,
            j.spec.name,
            phase,
            j.spec.ranks,
            pids.join(","),
            classes.join(",")
        )
    }

    pub(super) fn report(&self) -> RunReport {
        let jobs: Vec<JobReport> = self
            .order
            .iter()
            .map(|id| {
                let j = &self.jobs[id];
                JobReport {
                    id: j.id,
                    name: j.spec.name.clone(),
                    ranks: j.spec.ranks,
                    pes: j.pes.clone(),
                    uid: j.owner.uid,
                    submitted: self.secs(j.arrive_at),
                    started: j.started.map(|t| self.secs(t)),
                    ended: j.ended.map(|t| self.secs(t)),
                    outcome: j.outcome.clone().unwrap_or(JobOutcome::Stopped),
                    classes: j.classes.iter().map(|c| c.to_string()).collect(),
                    class_changes: j.changes.clone(),
                }
            })
            .collect();
        let makespan = jobs.iter().filter_map(|j| j.ended).fold(0.0, f64::max);
        RunReport {
            policy: self.m.policy.spec().to_string(),
            time_slice: self.slice().as_secs_f64(),
            suspend: self.m.suspender.kind(),
            suspend_note: self.m.suspender.fallback_reason().map(str::to_string),
            notices: self.notices.clone(),
            slots: self.slot,
            jobs,
            makespan,
            background_load: None,
        }
    }
}
