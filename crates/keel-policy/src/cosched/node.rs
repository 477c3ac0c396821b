//! What a node manager does on one PE at a multi-context-switch: FCS's
//! Algorithm 1 (FCS paper §2.2), and the two
//! building blocks every policy's decision is made of — one process alone
//! for the slot, or every resident process under the OS scheduler.

use super::{FcsParams, PeDecision, PeSlot, ProcRef, ProcessClass, WaitMode};

/// `process` alone for the whole slot, not preempted; everything else on
/// the PE is suspended.
pub fn exclusive(process: ProcRef, wait: WaitMode) -> PeDecision {
    PeDecision {
        runnable: vec![process],
        exclusive: true,
        boosted: None,
        wait,
    }
}

/// Every process on the PE resumed and left to the OS scheduler: the
/// assigned process first (also when missing from `resident`), then the
/// residents in order, each once.
pub fn all_resident(pe: &PeSlot, wait: WaitMode, boosted: Option<ProcRef>) -> PeDecision {
    let mut runnable: Vec<ProcRef> = Vec::with_capacity(pe.resident.len() + 1);
    for p in pe.assigned.iter().chain(&pe.resident) {
        // Identity is (job, rank): a stale class on a duplicate entry must
        // not make one process appear twice.
        if !runnable.iter().any(|q| q.job == p.job && q.rank == p.rank) {
            runnable.push(*p);
        }
    }
    PeDecision {
        runnable,
        exclusive: false,
        boosted,
        wait,
    }
}

/// Algorithm 1 on one PE for the slot starting now.
///
/// - The assigned process is CS: it alone runs for the whole slot and polls
///   on synchronous communication.
/// - Otherwise every process on the PE is resumed under the OS scheduler
///   and waits by spin-blocking for `t_spin`; an F assigned process is
///   boosted above the others so that it runs uninterrupted when it can.
///
/// An empty cell is treated like a DC slot (every resident process runs,
/// none boosted): this is what lets DC processes fill the matrix's holes.
/// The paper's early return when the process does not change is the
/// context's to take: equal slots give equal decisions.
pub fn context_switch(pe: &PeSlot, params: &FcsParams) -> PeDecision {
    match pe.assigned {
        Some(p) if p.class == ProcessClass::Cs => exclusive(p, WaitMode::Poll),
        assigned => {
            let spin = WaitMode::SpinBlock {
                spin: params.t_spin,
            };
            let boosted = assigned.filter(|p| p.class == ProcessClass::F);
            all_resident(pe, spin, boosted)
        }
    }
}
