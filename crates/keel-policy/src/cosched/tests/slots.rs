//! Algorithm 1 and the baselines' slot decisions, the Ousterhout
//! matrix's packing and compaction, and the §3.2.3 scenario.

use super::*;

// ------------------------------------------------ Algorithm 1 and slots

fn pe_with(assigned: Option<ProcRef>) -> (PeSlot, Vec<ProcRef>) {
    let resident = vec![
        proc_ref(1, 0, ProcessClass::Cs),
        proc_ref(2, 1, ProcessClass::F),
        proc_ref(3, 0, ProcessClass::Dc),
    ];
    (
        PeSlot {
            assigned,
            resident: resident.clone(),
        },
        resident,
    )
}

#[test]
fn algorithm1_cs_assigned_runs_alone_and_polls() {
    let fcs = parse("fcs").unwrap();
    let cs = proc_ref(1, 0, ProcessClass::Cs);
    let (pe, _) = pe_with(Some(cs));
    let d = fcs.decide(&pe);
    assert_eq!(d.runnable, [cs]);
    assert!(d.exclusive);
    assert_eq!(d.boosted, None);
    assert_eq!(d.wait, WaitMode::Poll);
    assert_eq!(d.wait, fcs.wait_mode(ProcessClass::Cs));
}

#[test]
fn algorithm1_f_assigned_resumes_everyone_and_boosts_it() {
    let fcs = parse("fcs:t-spin=2e-4").unwrap();
    let f = proc_ref(2, 1, ProcessClass::F);
    let (pe, resident) = pe_with(Some(f));
    let d = fcs.decide(&pe);
    assert_eq!(d.runnable, [resident[1], resident[0], resident[2]]);
    assert!(!d.exclusive);
    assert_eq!(d.boosted, Some(f));
    assert_eq!(d.wait, WaitMode::SpinBlock { spin: 2e-4 });
    assert_eq!(d.wait, fcs.wait_mode(ProcessClass::F));
}

#[test]
fn algorithm1_dc_assigned_or_empty_cell_resumes_everyone_unboosted() {
    let fcs = parse("fcs").unwrap();
    let dc = proc_ref(3, 0, ProcessClass::Dc);
    let (pe, resident) = pe_with(Some(dc));
    let d = fcs.decide(&pe);
    assert_eq!(d.runnable, [resident[2], resident[0], resident[1]]);
    assert!(!d.exclusive);
    assert_eq!(d.boosted, None);
    assert_eq!(d.wait, WaitMode::SpinBlock { spin: 100e-6 });
    // The CS process of another slot runs here too, spin-blocking.
    assert!(d.runnable.contains(&resident[0]));

    let (pe, resident) = pe_with(None);
    let d = fcs.decide(&pe);
    assert_eq!(d.runnable, resident);
    assert!(!d.exclusive);
    assert_eq!(d.boosted, None);
    assert_eq!(d.wait, WaitMode::SpinBlock { spin: 100e-6 });

    // Nothing on the PE: nothing runs.
    let d = fcs.decide(&PeSlot::default());
    assert!(d.runnable.is_empty());
}

#[test]
fn algorithm1_tolerates_a_missing_or_duplicated_resident() {
    let params = FcsParams::default();
    let f = proc_ref(9, 2, ProcessClass::F);
    let other = proc_ref(4, 0, ProcessClass::Dc);
    let pe = PeSlot {
        assigned: Some(f),
        resident: vec![other, other, proc_ref(9, 2, ProcessClass::Cs)],
    };
    let d = context_switch(&pe, &params);
    assert_eq!(d.runnable, [f, other], "assigned first, each process once");
    assert_eq!(d.boosted, Some(f));
    // A CS assigned process missing from the residents still runs alone.
    let cs = proc_ref(7, 0, ProcessClass::Cs);
    let d = context_switch(
        &PeSlot {
            assigned: Some(cs),
            resident: vec![other],
        },
        &params,
    );
    assert_eq!(d.runnable, [cs]);
    assert!(d.exclusive);
    // Equal slots give equal decisions (the paper's early return).
    assert_eq!(context_switch(&pe, &params), context_switch(&pe, &params));
}

#[test]
fn baseline_slot_decisions() {
    let assigned = proc_ref(2, 1, ProcessClass::F);
    let (pe, resident) = pe_with(Some(assigned));
    let (empty, _) = pe_with(None);

    // GS and FCFS: the assigned process alone, busy-waiting, whatever its
    // class; an empty cell idles.
    for name in ["gs", "fcfs"] {
        let p = parse(name).unwrap();
        let d = p.decide(&pe);
        assert_eq!(d.runnable, [assigned], "{name}");
        assert!(d.exclusive);
        assert_eq!(d.boosted, None);
        assert_eq!(d.wait, WaitMode::Poll);
        let d = p.decide(&empty);
        assert!(d.runnable.is_empty(), "{name}: an empty cell idles");
        assert!(!d.exclusive);
        for class in [ProcessClass::Cs, ProcessClass::F, ProcessClass::Dc] {
            assert_eq!(p.wait_mode(class), WaitMode::Poll);
        }
    }

    // Local: every resident process, busy-waiting, no favourite.
    let local = parse("local").unwrap();
    for slot in [&pe, &empty] {
        let d = local.decide(slot);
        let mut got = d.runnable.clone();
        got.sort();
        let mut want = resident.clone();
        want.sort();
        assert_eq!(got, want);
        assert!(!d.exclusive);
        assert_eq!(d.boosted, None);
        assert_eq!(d.wait, WaitMode::Poll);
    }

    // SB: the same, spin-blocking for its spin time.
    let sb = parse("sb").unwrap();
    let d = sb.decide(&pe);
    assert_eq!(d.runnable.len(), 3);
    assert_eq!(d.boosted, None);
    assert_eq!(d.wait, WaitMode::SpinBlock { spin: 100e-6 });
    let sb = parse("sb:spin=3e-5").unwrap();
    assert_eq!(sb.decide(&empty).wait, WaitMode::SpinBlock { spin: 3e-5 });
    assert_eq!(
        sb.wait_mode(ProcessClass::Dc),
        WaitMode::SpinBlock { spin: 3e-5 }
    );
}

#[test]
fn fcs_wait_modes_by_class() {
    let fcs = parse("fcs:t-spin=1e-3").unwrap();
    assert_eq!(fcs.wait_mode(ProcessClass::Cs), WaitMode::Poll);
    assert_eq!(
        fcs.wait_mode(ProcessClass::F),
        WaitMode::SpinBlock { spin: 1e-3 }
    );
    assert_eq!(
        fcs.wait_mode(ProcessClass::Dc),
        WaitMode::SpinBlock { spin: 1e-3 }
    );
}

// --------------------------------------------------------------- matrix

#[test]
fn matrix_packs_first_fit() {
    let mut m = Matrix::new(4);
    assert_eq!(m.pack(1, 3), Ok(0));
    assert_eq!(m.placement(1).unwrap().pes, [0, 1, 2]);
    assert_eq!(m.pack(2, 2), Ok(1), "row 0 has one free PE");
    assert_eq!(m.placement(2).unwrap().pes, [0, 1]);
    assert_eq!(m.pack(3, 1), Ok(0), "the first row with room");
    assert_eq!(m.placement(3).unwrap().pes, [3]);
    assert_eq!(m.pack(4, 2), Ok(1));
    assert_eq!(m.placement(4).unwrap().pes, [2, 3]);
    assert_eq!(m.pack(5, 4), Ok(2));
    assert_eq!(m.rows(), 3);
    assert_eq!(m.len(), 5);
    assert_eq!(m.cell(0, 3), Some((3, 0)));
    assert_eq!(m.cell(1, 3), Some((4, 1)));
    assert_eq!(m.cell(9, 0), None);
    assert_eq!(m.cell(0, 9), None);
    assert_eq!(m.jobs_in_row(1), [2, 4]);
    assert_eq!(m.free_in_row(0), 0);
    assert_eq!(m.on_pe(2), [(0, 1, 2), (1, 4, 0), (2, 5, 2)]);
    assert_eq!(
        (m.next_row(0), m.next_row(1), m.next_row(2)),
        (1, 2, 0),
        "rows rotate"
    );
    assert_eq!(Matrix::new(4).next_row(0), 0);
}

#[test]
fn matrix_compacts_after_removal_without_moving_pes() {
    let mut m = Matrix::new(4);
    m.pack(1, 4).unwrap(); // row 0
    m.pack(2, 2).unwrap(); // row 1, PEs 0-1
    m.pack(3, 3).unwrap(); // row 2, PEs 0-2
    m.pack(4, 1).unwrap(); // row 1, PE 2
    assert_eq!(m.rows(), 3);
    // Removing job 1 empties row 0: job 2 (PEs 0,1) and job 4 (PE 2) move
    // up; job 3 (PEs 0-2) then finds row 1 free on its PEs.
    let gone = m.remove(1).unwrap();
    assert_eq!(
        gone,
        Placement {
            row: 0,
            pes: vec![0, 1, 2, 3]
        }
    );
    assert_eq!(m.slot_of(2), Some(0));
    assert_eq!(m.slot_of(4), Some(0));
    assert_eq!(m.slot_of(3), Some(1));
    assert_eq!(m.rows(), 2);
    assert_eq!(m.placement(3).unwrap().pes, [0, 1, 2], "PEs never change");
    // A job whose PEs are busy in every earlier row stays put.
    let mut m = Matrix::new(2);
    m.pack(1, 2).unwrap();
    m.pack(2, 2).unwrap();
    m.pack(3, 2).unwrap();
    m.remove(2).unwrap();
    assert_eq!(
        (m.slot_of(1), m.slot_of(3), m.rows()),
        (Some(0), Some(1), 2)
    );
    m.remove(1).unwrap();
    m.remove(3).unwrap();
    assert!(m.is_empty());
    assert_eq!(m.rows(), 0);
}

#[test]
fn matrix_errors_are_typed() {
    let mut m = Matrix::new(4);
    assert_eq!(m.pack(1, 0), Err(CoschedError::EmptyJob { job: 1 }));
    assert_eq!(
        m.pack(1, 5),
        Err(CoschedError::JobTooWide {
            job: 1,
            processes: 5,
            pes: 4
        })
    );
    m.pack(1, 2).unwrap();
    assert_eq!(m.pack(1, 1), Err(CoschedError::DuplicateJob { job: 1 }));
    assert_eq!(
        m.pack_on(1, &[3]),
        Err(CoschedError::DuplicateJob { job: 1 })
    );
    assert_eq!(m.remove(7), Err(CoschedError::UnknownJob { job: 7 }));
    assert_eq!(
        m.pack_on(2, &[0, 4]),
        Err(CoschedError::PeOutOfRange {
            job: 2,
            pe: 4,
            pes: 4
        })
    );
    assert_eq!(
        m.pack_on(2, &[1, 2, 1]),
        Err(CoschedError::RepeatedPe { job: 2, pe: 1 })
    );
    assert_eq!(m.pack_on(2, &[]), Err(CoschedError::EmptyJob { job: 2 }));
    assert!(Matrix::new(0).pack(1, 1).is_err());
    // A failed pack leaves the matrix untouched.
    assert_eq!(m.len(), 1);
    assert_eq!(m.rows(), 1);
    // Row limit 1 (space slicing): a job that does not fit waits.
    let mut batch = Matrix::with_row_limit(4, 1);
    batch.pack(1, 3).unwrap();
    assert_eq!(
        batch.pack(2, 2),
        Err(CoschedError::MatrixFull { job: 2, rows: 1 })
    );
    assert_eq!(batch.pack(3, 1), Ok(0));
    batch.remove(1).unwrap();
    assert_eq!(batch.pack(2, 2), Ok(0));
    // Errors convert for the generic registry's callers.
    let e: PolicyError = CoschedError::JobTooWide {
        job: 1,
        processes: 5,
        pes: 4,
    }
    .into();
    assert!(e.to_string().contains("needs 5 PEs"), "{e}");
}

/// The paper's §3.2.3 scenario (Fig. 4): a 4-process job on PEs 0-3 and
/// three 2-process jobs on PEs 2-3. Under FCS, with job 0's ranks 0 and 1
/// DC, those ranks run in every slot (filling the holes), while under GS
/// PEs 0 and 1 idle in the other jobs' slots.
#[test]
fn fig4_packing_and_hole_filling() {
    let mut m = Matrix::new(4);
    assert_eq!(m.pack_on(0, &[0, 1, 2, 3]), Ok(0));
    for job in 1..=3 {
        assert_eq!(m.pack_on(job, &[2, 3]), Ok(job as usize));
    }
    assert_eq!(m.rows(), 4);
    let class_of = |job: JobId, rank: usize| match (job, rank) {
        (0, 0 | 1) => ProcessClass::Dc,
        (0, _) => ProcessClass::F,
        _ => ProcessClass::Dc,
    };
    let fcs = parse("fcs").unwrap();
    let gs = parse("gs").unwrap();
    for row in 1..4 {
        let slot = m.pe_slot(row, 0, class_of);
        assert_eq!(slot.assigned, None);
        assert_eq!(slot.resident, [proc_ref(0, 0, ProcessClass::Dc)]);
        assert_eq!(
            fcs.decide(&slot).runnable,
            slot.resident,
            "FCS fills the hole"
        );
        assert!(gs.decide(&slot).runnable.is_empty(), "GS idles");
    }
    // Row 0 on PE 2: job 0's rank 2 is F, so it is boosted over the three
    // other jobs' processes resident there.
    let slot = m.pe_slot(0, 2, class_of);
    assert_eq!(slot.resident.len(), 4);
    let d = fcs.decide(&slot);
    assert_eq!(d.boosted, Some(proc_ref(0, 2, ProcessClass::F)));
    assert_eq!(d.runnable.len(), 4);
}

#[derive(Clone, Debug)]
enum Op {
    Pack(usize),
    PackOn(Vec<usize>),
    Remove(usize),
}

fn op(pes: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        (1..=pes).prop_map(Op::Pack),
        proptest::sample::subsequence((0..pes).collect::<Vec<_>>(), 1..=pes)
            .prop_shuffle()
            .prop_map(Op::PackOn),
        any::<usize>().prop_map(Op::Remove),
    ]
}

fn check_matrix(m: &Matrix, sizes: &std::collections::BTreeMap<JobId, usize>) {
    // Every process of every job sits in exactly one cell, its own.
    let mut seen = std::collections::BTreeMap::<(JobId, usize), usize>::new();
    for row in 0..m.rows() {
        assert!(m.free_in_row(row) < m.pes(), "row {row} is empty");
        for pe in 0..m.pes() {
            if let Some(cell) = m.cell(row, pe) {
                *seen.entry(cell).or_default() += 1;
                let p = m.placement(cell.0).expect("a cell names a placed job");
                assert_eq!((p.row, p.pes[cell.1]), (row, pe));
            }
        }
    }
    let expected: usize = sizes.values().sum();
    assert_eq!(seen.len(), expected);
    assert!(seen.values().all(|&n| n == 1));
    for (&job, &n) in sizes {
        for rank in 0..n {
            assert_eq!(seen.get(&(job, rank)), Some(&1), "job {job} rank {rank}");
        }
        // Compacted: no earlier row is free on all of the job's PEs.
        let p = m.placement(job).unwrap();
        for row in 0..p.row {
            assert!(
                p.pes.iter().any(|&pe| m.cell(row, pe).is_some()),
                "job {job} could move up to row {row}"
            );
        }
    }
    assert_eq!(m.len(), sizes.len());
}

proptest! {
    #[test]
    fn matrix_places_each_process_exactly_once(
        (pes, ops) in (1usize..8).prop_flat_map(|pes| (Just(pes), proptest::collection::vec(op(pes), 1..60)))
    ) {
        let mut m = Matrix::new(pes);
        let mut sizes = std::collections::BTreeMap::new();
        let mut next: JobId = 0;
        for op in ops {
            match op {
                Op::Pack(n) => {
                    let row = m.pack(next, n).unwrap();
                    // First fit: no earlier row had n free PEs.
                    for r in 0..row {
                        prop_assert!(m.free_in_row(r) < n);
                    }
                    sizes.insert(next, n);
                    next += 1;
                }
                Op::PackOn(on) => {
                    let row = m.pack_on(next, &on).unwrap();
                    prop_assert_eq!(&m.placement(next).unwrap().pes, &on);
                    prop_assert_eq!(m.slot_of(next), Some(row));
                    sizes.insert(next, on.len());
                    next += 1;
                }
                Op::Remove(k) => {
                    if sizes.is_empty() {
                        prop_assert!(m.remove(next).is_err());
                    } else {
                        let job = *sizes.keys().nth(k % sizes.len()).unwrap();
                        let before = m.placement(job).unwrap().clone();
                        prop_assert_eq!(m.remove(job).unwrap(), before);
                        sizes.remove(&job);
                        prop_assert!(m.remove(job).is_err());
                    }
                }
            }
            check_matrix(&m, &sizes);
        }
    }
}
