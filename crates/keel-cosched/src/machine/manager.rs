//! The manager's run: its event loop, admission, launching, heartbeats
//! and the node managers' events.

use super::*;

impl Manager<'_> {
    pub(super) fn secs(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.t0).as_secs_f64()
    }

    pub(super) fn log(&self, text: &str) {
        if self.m.config.verbose {
            let t = self.secs(Instant::now());
            let _ = writeln!(std::io::stderr(), "[{t:9.4}] {text}");
        }
    }

    /// Records a job. One that breaks a limit of `job.rs` or does not fit
    /// this machine is recorded as rejected, before anything is allocated
    /// per rank, so that no spec (built in code, read from a file) can
    /// exhaust memory or overflow the clock.
    pub(super) fn submit(&mut self, spec: JobSpec, owner: Owner) -> JobId {
        self.forget_old_jobs();
        let id = next_job_id();
        let now = Instant::now();
        let checked = spec
            .validate()
            .and_then(|()| spec.check_fits(self.m.pes()))
            .map_err(|e| e.to_string())
            .and_then(|()| {
                Duration::try_from_secs_f64(spec.arrival)
                    .ok()
                    .and_then(|d| now.checked_add(d))
                    .ok_or_else(|| {
                        format!("arrival {} s is beyond the clock's range", spec.arrival)
                    })
            });
        let (phase, arrive_at, ranks, outcome) = match checked {
            Ok(at) => (Phase::Future, at, spec.ranks, None),
            Err(reason) => {
                self.log(&format!("job {id} rejected: {reason}"));
                (Phase::Done, now, 0, Some(JobOutcome::Rejected { reason }))
            }
        };
        self.jobs.insert(
            id,
            JobState {
                id,
                spec,
                owner,
                phase,
                arrive_at,
                pes: Vec::new(),
                ranks: vec![RankState::Launching; ranks],
                started: None,
                ended: None,
                outcome,
                classes: vec![ProcessClass::Cs; ranks],
                failed_at: None,
                changes: Vec::new(),
            },
        );
        self.order.push(id);
        id
    }

    /// A daemon serves for ever: past [`control::MAX_KEPT_JOBS`] records,
    /// the oldest ended jobs are forgotten (and miss from the final report)
    /// so that memory stays bounded however many jobs are submitted.
    pub(super) fn forget_old_jobs(&mut self) {
        if self.jobs.len() < control::MAX_KEPT_JOBS {
            return;
        }
        let excess = self.jobs.len() + 1 - control::MAX_KEPT_JOBS;
        let old: Vec<JobId> = self
            .order
            .iter()
            .copied()
            .filter(|id| self.jobs[id].phase == Phase::Done)
            .take(excess)
            .collect();
        for id in &old {
            self.jobs.remove(id);
        }
        self.order.retain(|id| self.jobs.contains_key(id));
    }

    pub(super) fn slice(&self) -> Duration {
        Duration::from_secs_f64(self.m.policy.time_slice().unwrap_or(self.m.config.tick))
    }

    pub(super) fn event_loop(&mut self, rx: &mpsc::Receiver<MmEvent>) {
        let lead = Duration::from_secs_f64(self.m.config.heartbeat_lead);
        let deadline = self.m.config.time_limit.map(|l| self.t0 + l);
        let first = self.admit();
        self.launch_all(&first);
        // The first slot starts as soon as the first jobs are launched.
        let mut next_switch = Instant::now() + lead;
        loop {
            if self.finished() {
                return;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                self.notices
                    .push("the run's time limit was reached: every job was stopped".into());
                self.stop_all();
            }
            let send_at = next_switch.checked_sub(lead).unwrap_or(next_switch);
            let next_arrival = self
                .jobs
                .values()
                .filter(|j| j.phase == Phase::Future)
                .map(|j| j.arrive_at)
                .min();
            let wake = next_arrival.map_or(send_at, |a| a.min(send_at));
            let ev = if wake > now {
                match rx.recv_timeout(wake - now) {
                    Ok(ev) => Some(ev),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            } else {
                None
            };
            let changed = match ev {
                Some(MmEvent::Node(n, e)) => self.node_event(n, e),
                Some(MmEvent::Control(req)) => {
                    self.control(req);
                    false
                }
                None => false,
            };
            let admitted = self.admit();
            if (changed || !admitted.is_empty())
                && self.m.policy.time_sharing() != TimeSharing::Gang
            {
                // Batch starts the next job at once; Uncoordinated jobs are
                // resident from their arrival. The heartbeat goes first so
                // that a new process starts runnable instead of being
                // suspended until the next one.
                self.heartbeat(Instant::now());
                next_switch = Instant::now() + self.slice();
                self.launch_all(&admitted);
            } else {
                self.launch_all(&admitted);
            }
            if Instant::now() >= send_at {
                self.heartbeat(next_switch);
                next_switch += self.slice();
                // A manager that fell behind skips slots instead of
                // sending a burst of stale ones.
                if next_switch < Instant::now() {
                    next_switch = Instant::now() + lead;
                }
            }
        }
    }

    pub(super) fn finished(&self) -> bool {
        if self.m.config.serve && !self.shutdown {
            return false;
        }
        self.jobs.values().all(|j| j.phase == Phase::Done)
    }

    pub(super) fn launch_all(&mut self, ids: &[JobId]) {
        for &id in ids {
            self.launch(id);
        }
    }

    /// Moves arrived jobs into the queue and places what fits in the
    /// matrix; returns the placed jobs, to be launched by the caller.
    pub(super) fn admit(&mut self) -> Vec<JobId> {
        let now = Instant::now();
        for id in self.order.clone() {
            let j = self.jobs.get_mut(&id).expect("ordered jobs exist");
            if j.phase == Phase::Future && j.arrive_at <= now {
                j.phase = Phase::Queued;
                self.queue.push_back(id);
            }
        }
        let mut placed = Vec::new();
        while let Some(&id) = self.queue.front() {
            let (ranks, pes) = {
                let j = &self.jobs[&id];
                (j.spec.ranks, j.spec.pes.clone())
            };
            let packed = match &pes {
                Some(pes) => self.matrix.pack_on(id, pes),
                None => self.matrix.pack(id, ranks),
            };
            match packed {
                Ok(_) => {
                    self.queue.pop_front();
                    placed.push(id);
                }
                // FCFS: the head waits, and so does everyone behind it.
                Err(CoschedError::MatrixFull { .. }) => break,
                Err(e) => {
                    self.queue.pop_front();
                    let j = self.jobs.get_mut(&id).expect("queued jobs exist");
                    j.phase = Phase::Done;
                    j.outcome = Some(JobOutcome::Rejected {
                        reason: e.to_string(),
                    });
                    self.log(&format!("job {id} rejected: {e}"));
                }
            }
        }
        placed
    }

    pub(super) fn launch(&mut self, id: JobId) {
        let placement = self.matrix.placement(id).expect("just packed").clone();
        let job = self.jobs.get_mut(&id).expect("job exists");
        let dirs = JobDir::create(&self.run_dir, id, job.owner);
        job.phase = Phase::Running;
        job.pes = placement.pes.clone();
        job.started = Some(Instant::now());
        let command: Vec<OsString> = match job.spec.command.split_first() {
            Some((first, rest)) if first == BSP_COMMAND => self
                .m
                .config
                .bsp_command
                .iter()
                .cloned()
                .chain(rest.iter().map(OsString::from))
                .collect(),
            _ => job.spec.command.iter().map(OsString::from).collect(),
        };
        let size = job.spec.ranks;
        let owner = job.owner;
        let name = job.spec.name.clone();
        let dirs = match dirs {
            Ok(d) => d,
            Err(e) => {
                // No rank can start without its files: each fails as a
                // rank that did not start would.
                for (rank, &pe) in placement.pes.iter().enumerate() {
                    let error = e.to_string();
                    self.node_event(
                        self.m.pe_home[pe].0,
                        NodeEvent::StartFailed {
                            job: id,
                            rank,
                            error,
                        },
                    );
                }
                return;
            }
        };
        for (rank, &pe) in placement.pes.iter().enumerate() {
            let (node, local) = self.m.pe_home[pe];
            let launch = Launch {
                job: id,
                rank,
                size,
                pe: local,
                command: command.clone(),
                owner,
                rendezvous: dirs.rendezvous.clone(),
                page: shm::page_path(&self.m.config.shm_dir, owner.uid, id, rank),
                stderr: dirs.stderr(rank),
            };
            let _ = self.nodes[node].send(NodeMsg::Launch(Box::new(launch)));
        }
        self.log(&format!(
            "job {id} ({name}) placed in row {} on PEs {:?}",
            placement.row, placement.pes
        ));
    }

    /// Sends every node the heartbeat of the next slot, switching at `at`.
    pub(super) fn heartbeat(&mut self, at: Instant) {
        self.row = match self.m.policy.time_sharing() {
            TimeSharing::Batch => 0,
            _ if self.slot == 0 => 0,
            _ => self.matrix.next_row(self.row),
        };
        if self.row >= self.matrix.rows() {
            self.row = 0;
        }
        for (n, tx) in self.nodes.iter().enumerate() {
            let cells = self
                .m
                .pe_home
                .iter()
                .enumerate()
                .filter(|(_, (node, _))| *node == n)
                .map(|(pe, _)| self.matrix.cell(self.row, pe))
                .collect();
            let _ = tx.send(NodeMsg::Heartbeat(Heartbeat {
                slot: self.slot,
                row: self.row,
                switch_at: at,
                cells,
            }));
        }
        self.slot += 1;
    }

    /// Handles a node event; true when the matrix changed.
    pub(super) fn node_event(&mut self, node: usize, e: NodeEvent) -> bool {
        match e {
            // This manager's node managers are not asked to report them.
            NodeEvent::Switched { .. } => false,
            NodeEvent::Notice(text) => {
                // Each notice is said once, on stderr and in the report.
                if !self.notices.contains(&text) {
                    let _ = writeln!(std::io::stderr(), "keel-cosched: {text}");
                    self.notices.push(text);
                }
                false
            }
            NodeEvent::Started { job, rank, pid } => {
                self.log(&format!(
                    "started job={job} rank={rank} pid={pid} node={node}"
                ));
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.ranks[rank] = RankState::Running(pid);
                }
                false
            }
            NodeEvent::StartFailed { job, rank, error } => {
                self.log(&format!("job {job} rank {rank} did not start: {error}"));
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.ranks[rank] = RankState::Gone;
                    if j.outcome.is_none() {
                        j.outcome = Some(JobOutcome::Failed {
                            rank,
                            reason: format!("did not start: {error}"),
                        });
                    }
                }
                self.end_job(job);
                self.maybe_done(job)
            }
            NodeEvent::Exited {
                job,
                rank,
                status,
                at,
                stderr_tail,
            } => {
                self.log(&format!("exited job={job} rank={rank} {status}"));
                let mut failed = false;
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.ranks[rank] = RankState::Gone;
                    j.ended = Some(j.ended.map_or(at, |e| e.max(at)));
                    // The job's failure is the rank that exited first with
                    // an error, by the instants stamped in the order the
                    // kernel signalled the ends (`node::ExitWatch`), not by
                    // the order the nodes' reports arrive in: a rank whose
                    // peer died usually fails right after it.
                    let first = j.outcome.is_none();
                    let earlier = first || j.failed_at.is_some_and(|t| at < t);
                    if !status.success() && earlier {
                        let mut reason = status.to_string();
                        if let Some(t) = stderr_tail {
                            reason.push_str(&format!(": {t}"));
                        }
                        j.outcome = Some(JobOutcome::Failed { rank, reason });
                        j.failed_at = Some(at);
                        failed = first;
                    }
                }
                if failed {
                    self.end_job(job);
                }
                self.maybe_done(job)
            }
            NodeEvent::Classified {
                job,
                rank,
                from,
                to,
                stats,
                ..
            } => {
                let t = self.secs(Instant::now());
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.classes[rank] = to;
                    j.changes.push(ClassChange {
                        t,
                        rank,
                        from: from.to_string(),
                        to: to.to_string(),
                        avg_cpu: stats.0,
                        avg_comm: stats.1,
                    });
                }
                self.log(&format!(
                    "job {job} rank {rank}: {from} -> {to} (avg cpu {:.2} ms, avg comm {:.2} ms)",
                    stats.0 * 1e3,
                    stats.1 * 1e3
                ));
                false
            }
        }
    }

    /// Kills a job's processes (resuming them first) on every node.
    pub(super) fn end_job(&mut self, id: JobId) {
        let Some(j) = self.jobs.get_mut(&id) else {
            return;
        };
        if matches!(j.phase, Phase::Running) {
            j.phase = Phase::Ending;
            let mut nodes: Vec<usize> = j.pes.iter().map(|&pe| self.m.pe_home[pe].0).collect();
            nodes.dedup();
            for n in nodes {
                let _ = self.nodes[n].send(NodeMsg::KillJob(id));
            }
        } else if matches!(j.phase, Phase::Future | Phase::Queued) {
            j.phase = Phase::Done;
            self.queue.retain(|q| *q != id);
        }
    }

    /// Frees a job's matrix slots once none of its processes is left;
    /// true when it did.
    pub(super) fn maybe_done(&mut self, id: JobId) -> bool {
        let Some(j) = self.jobs.get_mut(&id) else {
            return false;
        };
        if !matches!(j.phase, Phase::Running | Phase::Ending)
            || j.ranks.iter().any(|r| *r != RankState::Gone)
        {
            return false;
        }
        j.phase = Phase::Done;
        if j.outcome.is_none() {
            j.outcome = Some(JobOutcome::Completed);
        }
        if j.ended.is_none() {
            j.ended = Some(Instant::now());
        }
        let _ = std::fs::remove_dir_all(self.run_dir.join(format!("job-{id}")));
        let _ = self.matrix.remove(id);
        self.log(&format!("job {id} done"));
        true
    }

    pub(super) fn stop_all(&mut self) {
        self.shutdown = true;
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for id in ids {
            let j = self.jobs.get_mut(&id).expect("listed");
            if j.phase != Phase::Done && j.outcome.is_none() {
                j.outcome = Some(JobOutcome::Stopped);
            }
            self.end_job(id);
        }
    }
}
