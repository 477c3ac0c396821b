//! The workload of `keel sim objects`, fixed before measuring: the
//! Lassen-like proxy's pinned defaults scaled by its documented rule (16
//! domains per PU, `LassenLike::for_pus`) to 64 nodes × 16 PUs. If this
//! test changes, the Table 1–2 figures measured on it are void.

use keel_sim::objects::{ObjectCosts, WorkloadCosts};
use keel_workloads::objects::{LassenLike, ObjectWorkload};

#[test]
fn the_lassen_workload_of_sim_objects_is_pinned() {
    let l = LassenLike::for_pus(64 * 16);
    assert_eq!(
        l.spec(),
        "lassen:pus=1024,width=8,height=2048,steps=300,base-us=50,front-us=2000,cells=64,scale=1"
    );
    assert_eq!(l.objects(), 16_384);
    let hot: Vec<usize> = [0, 1, 50, 150, 299]
        .iter()
        .map(|&s| l.hot_domains(s))
        .collect();
    assert_eq!(hot, [1, 20, 16, 16, 16]);
    let costs = WorkloadCosts::uniform_cells(&l);
    assert!((costs.serial(5, 0) - 50e-6).abs() < 1e-15);
    assert!((costs.potential(0, 0) - 2e-3).abs() < 1e-12);
    assert_eq!(costs.potential(16_383, 0), 0.0);
}

#[test]
fn uniform_cells_agree_with_asking_every_cell() {
    let l = LassenLike {
        steps: 30,
        ..LassenLike::for_pus(8)
    };
    let fast = WorkloadCosts::uniform_cells(&l);
    let exact = WorkloadCosts::new(&l);
    for step in 0..l.steps {
        for o in 0..l.objects() {
            let (a, b) = (fast.potential(o, step), exact.potential(o, step));
            assert!((a - b).abs() <= 1e-12 * b.max(1e-9), "{o} {step}");
            let (mut ca, mut cb) = (Vec::new(), Vec::new());
            fast.chunk_costs(o, step, 7, &mut ca);
            exact.chunk_costs(o, step, 7, &mut cb);
            for (x, y) in ca.iter().zip(&cb) {
                assert!((x - y).abs() <= 1e-12 * y.max(1e-9));
            }
        }
    }
}
