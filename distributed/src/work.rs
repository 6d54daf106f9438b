//! The handle an asynchronous collective returns (PyTorch's `Work`).

use kiln_core::{Error, Result};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A collective in flight: [`Work::wait`] blocks until it has finished and returns its
/// outcome. Dropping it without waiting lets the collective finish unobserved.
#[derive(Debug)]
pub struct Work {
    state: Arc<State>,
}

#[derive(Debug)]
struct State {
    op: &'static str,
    outcome: Mutex<Outcome>,
    done: Condvar,
    /// Past this, `wait` gives up even if the backend never reports (a thread stuck in a
    /// blocking MPI call): the group's timeout plus a margin for the backend's own check.
    limit: Duration,
}

#[derive(Debug)]
enum Outcome {
    Pending,
    Done(Result<()>),
    Taken,
}

/// The backend's side of a [`Work`]: completes it once.
#[derive(Debug, Clone)]
pub(crate) struct Completion {
    state: Arc<State>,
}

impl Work {
    /// A pending work and the completion that finishes it.
    pub(crate) fn pending(op: &'static str, timeout: Duration) -> (Work, Completion) {
        let state = Arc::new(State {
            op,
            outcome: Mutex::new(Outcome::Pending),
            done: Condvar::new(),
            limit: timeout.saturating_add(Duration::from_secs(5)),
        });
        (
            Work {
                state: state.clone(),
            },
            Completion { state },
        )
    }

    /// Whether the collective has finished (successfully or not).
    pub fn is_completed(&self) -> bool {
        !matches!(*lock(&self.state.outcome), Outcome::Pending)
    }

    /// Blocks until the collective has finished; its error if it failed or timed out.
    pub fn wait(self) -> Result<()> {
        let deadline = Instant::now() + self.state.limit;
        let mut g = lock(&self.state.outcome);
        loop {
            match std::mem::replace(&mut *g, Outcome::Taken) {
                Outcome::Done(r) => return r,
                Outcome::Taken => unreachable!("a Work is waited on once (wait takes self)"),
                Outcome::Pending => *g = Outcome::Pending,
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::distributed(
                    self.state.op,
                    format!(
                        "Work ran for more than {:?} without completing: the process group's backend is stuck (a peer that never reached this collective?)",
                        self.state.limit
                    ),
                ));
            }
            g = self
                .state
                .done
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Completion {
    /// Records the outcome and wakes the waiter.
    pub(crate) fn complete(&self, result: Result<()>) {
        let mut g = lock(&self.state.outcome);
        if matches!(*g, Outcome::Pending) {
            *g = Outcome::Done(result);
        }
        self.state.done.notify_all();
    }

    pub(crate) fn op(&self) -> &'static str {
        self.state.op
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
