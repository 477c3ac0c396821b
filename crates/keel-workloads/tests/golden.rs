//! Golden values: the generated workloads are part of Keel's results, so a
//! change to any generator (or to the random stream under it) must show up
//! here and be made on purpose.

use keel_workloads::generate;

fn assert_close(spec: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-12 * want.abs(),
        "{spec}: sum {got:e}, pinned {want:e}"
    );
}

#[test]
fn lb_test_first_loads_for_seed_12345() {
    let problem = generate("lb-test:tasks=16000,pus=80,min-us=10,max-us=3000,seed=12345").unwrap();
    assert_eq!(
        problem.task_loads[..5],
        [
            1.0088234843332793e-5,
            1.0009714256068927e-5,
            0.0011736176004598082,
            4.6952454090588245e-5,
            1.0183156307967299e-5,
        ]
    );
}

#[test]
fn lb_test_redraw_first_loads() {
    let problem = generate("lb-test:redraw-seed=777").unwrap();
    assert_eq!(
        problem.task_loads[..3],
        [
            0.0001030584626425307,
            0.00033463895131534015,
            0.0005328380828362979
        ]
    );
}

#[test]
fn every_generator_sum_is_pinned() {
    for (spec, ntasks, sum) in [
        ("lb-test", 16_000, 9.653169671442361),
        ("lb-test:redraw-seed=777", 16_000, 9.777241365788962),
        ("leanmd", 19_456, 6.034738209999932),
        ("leanmd:x=3,y=3,z=3,pus=4", 1026, 0.29833292999999966),
        ("ramp", 10_000, 5.005000000000001),
        ("hotspot", 8192, 2.1969068668510494),
    ] {
        let problem = generate(spec).unwrap();
        assert_eq!(problem.ntasks(), ntasks, "{spec}");
        assert_close(spec, problem.total_load(), sum);
    }
}

#[test]
fn defaults_are_the_documented_ones() {
    assert_eq!(
        generate("lb-test").unwrap(),
        generate("lb-test:tasks=16000,pus=80,min-us=10,max-us=3000,seed=12345,current=block")
            .unwrap()
    );
    assert_eq!(
        generate("leanmd").unwrap(),
        generate("leanmd:x=8,y=8,z=8,pus=64,ns-per-pair=10").unwrap()
    );
    assert_eq!(generate("leanmd").unwrap().npus(), 64);
    assert_eq!(generate("ramp").unwrap().npus(), 16);
    assert_eq!(generate("hotspot").unwrap().npus(), 32);
}
