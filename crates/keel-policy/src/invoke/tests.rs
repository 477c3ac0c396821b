use super::*;

/// Feeds `loads(step)` for `steps` steps; a balance costs `cost` and
/// leaves `after(step)` loads from then on where `after` is given (else
/// the same function). Returns the steps after which it balanced.
fn run(
    trigger: &mut Trigger,
    steps: usize,
    cost: f64,
    mut loads: impl FnMut(usize, usize) -> Vec<f64>,
) -> Vec<usize> {
    let mut balances = Vec::new();
    let mut history = LoadHistory::new();
    for step in 1..=steps {
        let now = loads(step, balances.len());
        let summary = history.add(&now);
        let verdict = trigger.after_step(step, &summary, Some(steps - step));
        if verdict.balance {
            balances.push(step);
            trigger.balanced(cost);
            history.clear();
        }
    }
    balances
}

#[test]
fn a_persistent_imbalance_is_balanced_once_and_then_left_alone() {
    let mut t = Trigger::new(Invocation::Adaptive, 1e-3);
    // 4 PUs, one 8 ms heavier until a balance evens them out.
    let balances = run(&mut t, 200, 1e-3, |_, done| {
        if done == 0 {
            vec![0.018, 0.010, 0.010, 0.010]
        } else {
            vec![0.012, 0.012, 0.012, 0.012]
        }
    });
    assert_eq!(balances, vec![MIN_STEPS]);
}

#[test]
fn a_linearly_growing_imbalance_is_balanced_near_the_meta_balancer_period() {
    // Loss b·t after each balance (t steps since it), cost C: the
    // rent-or-buy rule balances once b·t²/2 ≥ PAYBACK·C, i.e. every
    // √(2·PAYBACK·C/b) steps.
    let (b, cost) = (1e-5, 2e-3);
    let expected = (2.0 * PAYBACK * cost / b).sqrt();
    let mut t = Trigger::new(Invocation::Adaptive, cost);
    let mut since_balance = 0usize;
    let mut balances = Vec::new();
    let mut history = LoadHistory::new();
    for step in 1..=2_000 {
        since_balance += 1;
        let now = vec![0.01 + 2.0 * b * since_balance as f64, 0.01];
        let v = t.after_step(step, &history.add(&now), None);
        if v.balance {
            balances.push(step);
            t.balanced(cost);
            since_balance = 0;
            history.clear();
        }
    }
    let gaps: Vec<usize> = balances.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() > 10, "{balances:?}");
    for &gap in &gaps[1..] {
        // The floor (measured in the settle window, decaying) and the
        // settle steps put it within a few steps of the model's period.
        assert!(
            (gap as f64 - expected).abs() <= 0.15 * expected + SETTLE_STEPS as f64,
            "gap {gap} vs √(2·{PAYBACK}·C/b) = {expected:.1}; {gaps:?}"
        );
    }
}

#[test]
fn noise_does_not_pay() {
    // Two PUs whose loads differ by noise alone: which one is heavier is a
    // coin toss each step.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut noise = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 1000) as f64 * 1e-7
    };
    let mut t = Trigger::new(Invocation::Adaptive, 1e-5);
    let balances = run(&mut t, 1_000, 1e-5, |_, _| {
        vec![0.01 + noise(), 0.01 + noise()]
    });
    // The loss per step (~30 µs) is three times the cost (10 µs), but it
    // does not persist: a handful of balances at most, early, while few
    // steps make chance agreement likely, none later.
    assert!(balances.len() <= 4, "{balances:?}");
}

#[test]
fn an_imbalance_that_moves_every_step_never_pays() {
    let mut t = Trigger::new(Invocation::Adaptive, 1e-4);
    // The heavy PU alternates: nothing a balance could keep.
    let balances = run(&mut t, 500, 1e-4, |step, _| {
        if step % 2 == 0 {
            vec![0.02, 0.01]
        } else {
            vec![0.01, 0.02]
        }
    });
    assert!(balances.is_empty(), "{balances:?}");
}

#[test]
fn a_balance_that_removed_nothing_raises_the_floor() {
    let cost = 1e-3;
    let mut t = Trigger::new(Invocation::Adaptive, cost);
    // The loss is the same whatever is done (objects too large to split):
    // after the first balance finds that out, balances become rare.
    let balances = run(&mut t, 400, cost, |_, _| vec![0.02, 0.01]);
    assert!(!balances.is_empty());
    // Without the floor: one every 2 steps (5 ms lost per step vs 2 ms
    // due). With it, the floor must decay before excess builds up, and
    // each futile balance doubles what the next must repay: the gaps grow
    // until the backoff reaches MAX_BACKOFF (then about 60 steps apart:
    // 64 × 2 ms of loss above a floor decaying from 5 ms a step).
    assert!(balances.len() <= 10, "{balances:?}");
    let gaps: Vec<usize> = balances.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|&g| g >= 10), "{gaps:?}");
    assert!(gaps.windows(2).all(|w| w[1] >= w[0]), "{gaps:?}");
    assert_eq!(
        t.backoff(),
        2f64.powi(balances.len() as i32).min(MAX_BACKOFF)
    );
}

#[test]
fn a_new_phase_is_balanced_though_the_old_one_raised_the_floor() {
    let cost = 1e-3;
    let mut t = Trigger::new(Invocation::Adaptive, cost);
    let mut history = LoadHistory::new();
    let mut late = None;
    for step in 1..=600 {
        // Until step 300 an unremovable 5 ms; then a far larger imbalance
        // that a balance removes.
        let now = match (step <= 300, late) {
            (true, _) => vec![0.02, 0.01],
            (false, None) => vec![0.09, 0.01],
            (false, Some(_)) => vec![0.05, 0.05],
        };
        let v = t.after_step(step, &history.add(&now), None);
        if v.balance {
            t.balanced(cost);
            history.clear();
            if step > 300 && late.is_none() {
                late = Some(step);
            }
        }
    }
    let late = late.expect("the new phase is balanced");
    assert!(late <= 300 + MIN_STEPS + SETTLE_STEPS, "after step {late}");
}

#[test]
fn the_last_steps_are_not_balanced_when_they_cannot_repay() {
    let mut t = Trigger::new(Invocation::Adaptive, 10e-3);
    let mut history = LoadHistory::new();
    let mut reasons = Vec::new();
    for step in 1..=30 {
        let s = history.add(&[0.011, 0.010]);
        reasons.push(t.after_step(step, &s, Some(3)).reason);
    }
    // 0.5 ms per step × 3 steps < 2 × 10 ms: never.
    assert!(reasons
        .iter()
        .skip(MIN_STEPS)
        .all(|r| matches!(r, Reason::TooFewStepsLeft { remaining: 3, .. })));
}

#[test]
fn periodic_and_never() {
    let every = Invocation::parse("periodic:steps=3").unwrap();
    let mut t = Trigger::new(every, 0.0);
    let s = LoadSummary::of(&[1.0, 0.0], &[1.0, 0.0]);
    let due: Vec<bool> = (1..=9).map(|k| t.after_step(k, &s, None).balance).collect();
    assert_eq!(
        due,
        [false, false, true, false, false, true, false, false, true]
    );
    let mut never = Trigger::new(Invocation::Never, 0.0);
    assert!((1..=100).all(|k| never.after_step(k, &s, None).reason == Reason::Never));
}

#[test]
fn one_pu_or_balanced_loads_never_balance() {
    let mut t = Trigger::new(Invocation::Adaptive, 0.0);
    assert!(run(&mut t, 100, 0.0, |_, _| vec![0.5]).is_empty());
    let mut t = Trigger::new(Invocation::Adaptive, 0.0);
    assert!(run(&mut t, 100, 0.0, |_, _| vec![0.5, 0.5, 0.5]).is_empty());
}

#[test]
fn hostile_numbers_do_not_steer_it() {
    for bad in [f64::NAN, f64::INFINITY, -1.0, f64::NEG_INFINITY] {
        let mut t = Trigger::new(Invocation::Adaptive, bad);
        assert_eq!(t.cost(), 0.0);
        t.balanced(1e-3);
        t.balanced(bad);
        assert_eq!(t.cost(), 1e-3, "a bad measurement keeps the last cost");
        let mut history = LoadHistory::new();
        for k in 1..=10 {
            let s = history.add(&[bad, bad, 1.0]);
            assert!(s.loss().is_finite() && s.accumulated_loss().is_finite());
            let v = t.after_step(k, &s, Some(usize::MAX));
            assert!(
                !v.balance || matches!(v.reason, Reason::Pays { loss_s, .. } if loss_s.is_finite()),
                "{v:?}"
            );
        }
    }
    // Another PU count starts the sums afresh.
    let mut history = LoadHistory::new();
    history.add(&[5.0, 1.0]);
    assert_eq!(history.add(&[1.0, 2.0, 3.0]).accumulated_loss(), 1.0);
    assert_eq!(LoadSummary::of(&[], &[]).loss(), 0.0);
}

#[test]
fn specs_round_trip_and_refuse() {
    for text in ["adaptive", "never", "periodic:steps=1", "periodic:steps=50"] {
        let i = Invocation::parse(text).unwrap();
        assert_eq!(i.spec(), text);
        assert_eq!(Invocation::parse(&i.to_string()).unwrap(), i);
    }
    for bad in [
        "periodic",
        "periodic:steps=0",
        "periodic:steps=-1",
        "periodic:steps=99999999999999999999",
        "adaptive:steps=3",
        "never:x=1",
        "",
        "(",
    ] {
        assert!(Invocation::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(Invocation::default(), Invocation::Adaptive);
}

#[test]
fn reasons_read_as_sentences() {
    let r = Reason::CostsMore {
        loss_s: 1e-3,
        cost_s: 2e-3,
    };
    assert_eq!(
        r.to_string(),
        "1.000 ms lost since the last balance < 2 × 2.000 ms it costs"
    );
    assert!(Reason::Pays {
        loss_s: 5e-3,
        cost_s: 2e-3
    }
    .to_string()
    .contains('≥'));
}
