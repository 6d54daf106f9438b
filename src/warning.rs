//! User warnings (PyTorch's `warnings.warn(message, UserWarning)`): printed to stderr as
//! `UserWarning: <message>`, or recorded by [`catch_warnings`] (PyTorch's
//! `warnings.catch_warnings(record=True)`) for a caller that wants to inspect them.

use std::cell::RefCell;

thread_local! {
    /// The innermost [`catch_warnings`] on this thread, if any, collects here.
    static CAUGHT: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Issues a `UserWarning`: recorded by an enclosing [`catch_warnings`] on this thread,
/// otherwise printed to stderr.
pub fn warn(message: impl Into<String>) {
    let message = message.into();
    let unrecorded = CAUGHT.with(|c| match c.borrow_mut().as_mut() {
        Some(list) => {
            list.push(message);
            None
        }
        None => Some(message),
    });
    if let Some(m) = unrecorded {
        eprintln!("UserWarning: {m}");
    }
}

/// Runs `f`, returning its result and the messages of the warnings it issued on this
/// thread (instead of printing them), in order.
///
/// ```
/// let ((), caught) = kiln::catch_warnings(|| kiln::warn("careful"));
/// assert_eq!(caught, ["careful"]);
/// ```
pub fn catch_warnings<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    /// Puts the enclosing collector back, even if `f` panics.
    struct Restore(Option<Vec<String>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            CAUGHT.with(|c| *c.borrow_mut() = outer);
        }
    }
    let outer = CAUGHT.with(|c| c.borrow_mut().replace(Vec::new()));
    let restore = Restore(outer);
    let r = f();
    let caught = CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_default();
    drop(restore);
    (r, caught)
}
