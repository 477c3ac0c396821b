//! [`Feedback`]: the collector's handle on the emitter's pool.

use std::collections::VecDeque;

/// The collector's handle on the emitter's pool in
/// [`Farm::run_feedback`](super::Farm::run_feedback).
#[derive(Debug)]
pub struct Feedback<'a, T> {
    pub(super) pool: &'a mut VecDeque<T>,
    pub(super) stop: &'a mut bool,
}

impl<T> Feedback<'_, T> {
    /// Returns an item to the emitter's pool (ignored after [`Self::stop`]).
    pub fn send(&mut self, item: T) {
        if !*self.stop {
            self.pool.push_back(item);
        }
    }

    /// Stops the farm: nothing more is dispatched; results of items already
    /// dispatched are still collected.
    pub fn stop(&mut self) {
        *self.stop = true;
        self.pool.clear();
    }

    /// Items waiting in the pool.
    pub fn pending(&self) -> usize {
        self.pool.len()
    }

    /// Whether [`Self::stop`] was called.
    pub fn stopped(&self) -> bool {
        *self.stop
    }
}
