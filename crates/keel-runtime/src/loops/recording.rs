//! Whether a loop instance is recorded: decided here and nowhere else.
//!
//! A recorded instance touches the loop's state (a registry lookup and two
//! short locks), reads the clock at each participant's start and finish,
//! and updates the loop's [`LoopRecord`](super::LoopRecord). An instance is
//! recorded when `auto`'s selector needs it measured, when its schedule
//! reads what the loop's memory keeps (an iteration profile, AWF's
//! history, a cached iteration assignment), or when recording was asked
//! for ([`ParallelLoop::recorded`](super::ParallelLoop::recorded),
//! [`record_all`], `KEEL_LOOP_RECORD=all`). Every other instance costs its
//! plan and its claims, and reads no clock (its summary's T_par and LIB
//! are `None`).

use std::sync::atomic::{AtomicU8, Ordering};

use super::settings;

/// Whether an instance is recorded: `selector_measures` when `auto`'s
/// selector asked for this instance's measurements, `reads_memory` when
/// its schedule reads what the loop's memory keeps, `asked` when the loop
/// was built [`recorded`](super::ParallelLoop::recorded).
#[inline]
pub(crate) fn must_record(selector_measures: bool, reads_memory: bool, asked: bool) -> bool {
    selector_measures || reads_memory || asked || recording_all()
}

/// Records every loop instance from now on (`true`), or only those that
/// need it (`false`, the default unless `KEEL_LOOP_RECORD=all`): see
/// [`LoopRecord`](super::LoopRecord) for what each kind of loop keeps.
///
/// ```
/// use keel::loops::{record, record_all, LoopId};
/// record_all(true);
/// keel::parallel(0..100u32).schedule("static".parse()?).id("doc-all").for_each(|_| {});
/// let rec = record(LoopId::named("doc-all")).expect("recorded");
/// assert_eq!(rec.last.finish.len(), rec.last.threads);
/// record_all(false);
/// # Ok::<(), keel::loops::ScheduleError>(())
/// ```
pub fn record_all(on: bool) {
    RECORD_ALL.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

const UNSET: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

/// [`record_all`]'s setting; `UNSET` until the first instance reads
/// `KEEL_LOOP_RECORD` or code sets it.
static RECORD_ALL: AtomicU8 = AtomicU8::new(UNSET);

/// Whether every instance is recorded.
#[inline]
pub(crate) fn recording_all() -> bool {
    match RECORD_ALL.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => recording_all_from_env(),
    }
}

/// [`recording_all`] the first time: `KEEL_LOOP_RECORD` decides, unless
/// code set the switch meanwhile.
#[cold]
fn recording_all_from_env() -> bool {
    let on = settings::record_all();
    let _ = RECORD_ALL.compare_exchange(
        UNSET,
        if on { ON } else { OFF },
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    RECORD_ALL.load(Ordering::Relaxed) == ON
}
