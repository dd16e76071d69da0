//! The shape every owned CUDA handle shares, written once: a `#[repr(transparent)]` non-null
//! pointer of the raw handle's size and alignment (checked at compile time), `from_raw` /
//! `as_raw` / `into_raw`, and a `Drop` that destroys the handle and keeps a failure for
//! [`take_drop_errors`](crate::error::take_drop_errors). `Send`/`Sync` stay with each type: they
//! differ (a graph is not `Sync`, an event is), each with the reason CUDA gives.

/// `owned_handle! { #[attrs] pub struct Name(RawTarget) = raw_type, destroyed by cudaXDestroy; }`
macro_rules! owned_handle {
    (
        $(#[$attr:meta])*
        pub struct $name:ident($target:ty) = $raw:ty, destroyed by $destroy:ident;
    ) => {
        $(#[$attr])*
        #[repr(transparent)]
        pub struct $name {
            raw: core::ptr::NonNull<$target>,
        }

        static_assertions::assert_eq_size!($name, $raw);
        static_assertions::assert_eq_align!($name, $raw);

        impl $name {
            /// Takes ownership of a raw handle: dropping the value destroys it.
            ///
            /// # Safety
            /// `raw` is a live handle that nothing else will destroy; `None` for null.
            pub unsafe fn from_raw(raw: $raw) -> Option<$name> {
                core::ptr::NonNull::new(raw).map(|raw| $name { raw })
            }

            /// The raw handle, still owned by this value.
            #[inline(always)]
            pub fn as_raw(&self) -> $raw {
                self.raw.as_ptr()
            }

            /// Gives the raw handle up: the caller destroys it.
            pub fn into_raw(self) -> $raw {
                let raw = self.raw.as_ptr();
                core::mem::forget(self);
                raw
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: an owned, live handle, destroyed once, here. What CUDA does with work
                // still using it is said in the type's documentation.
                let code = unsafe { sys::$destroy(self.raw.as_ptr()) };
                $crate::error::record_drop_error(code, stringify!($destroy));
            }
        }
    };
}
