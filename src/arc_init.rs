//! Building a value straight into its `Arc`'s allocation.

/// `Arc::new(value)`, allocated first and written in place. `Arc::new` builds the value on
/// the stack, allocates, then copies it over; for the few-hundred-byte structs every op
/// makes (a tensor, an autograd node) that copy went through `memcpy` and read back stores
/// that had not landed yet, a visible share of a small op's time. A macro, not a function
/// taking a closure: through the closure the value was built on the stack again.
///
/// `arc_new!(value, |v| ...)` then runs the closure on the value in place, before the `Arc`
/// is handed out (to fill a node's edges where they will stay).
macro_rules! arc_new {
    ($value:expr) => {
        $crate::arc_init::arc_new!($value, |_| {})
    };
    ($value:expr, $fill:expr) => {{
        // `Arc::new` of an uninitialised value copies nothing, and its layout is a
        // constant, where `Arc::new_uninit` works it out in a call.
        let slot = ::std::sync::Arc::new(::std::mem::MaybeUninit::uninit());
        // Written through the raw pointer, not `Arc::get_mut`: that proves uniqueness with a
        // locked compare-exchange on the weak count, which waited on every store before it.
        // SAFETY: `slot` was made just above and no other handle to it exists, so nothing
        // else reads or writes its value; the pointer comes from the allocation (not from a
        // shared reference), so it may write. `assume_init` follows the write.
        let value: &mut _ = unsafe { (*::std::sync::Arc::as_ptr(&slot).cast_mut()).write($value) };
        ($fill)(value);
        // SAFETY: the value was written just above.
        unsafe { slot.assume_init() }
    }};
}
pub(crate) use arc_new;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    #[test]
    fn holds_the_value_and_drops_it_once() {
        let inner = Arc::new(5u32);
        let a: Arc<(Arc<u32>, [u64; 40])> = arc_new!((inner.clone(), [7u64; 40]));
        assert_eq!(*a.0, 5);
        assert!(a.1.iter().all(|&x| x == 7));
        assert_eq!(Arc::strong_count(&inner), 2);
        drop(a);
        assert_eq!(Arc::strong_count(&inner), 1);
    }

    #[test]
    fn fills_in_place_before_handing_out() {
        let a: Arc<Vec<u32>> = arc_new!(vec![1], |v: &mut Vec<u32>| v.push(2));
        assert_eq!(*a, vec![1, 2]);
    }
}
