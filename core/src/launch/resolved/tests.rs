use super::*;

/// Addresses no real kernel has (the table is shared with the rest of the tests).
fn fake(n: usize) -> NonNull<c_void> {
    NonNull::new((0x7000_0000_0000_usize + n * 0x1000) as *mut c_void).unwrap()
}

/// Keys of two resolvers (any distinct non-null addresses).
const KEY_A: *const c_void = 0xA0 as *const c_void;
const KEY_B: *const c_void = 0xB0 as *const c_void;

/// Ordo's runtime where it answers (a driver is there) that an address is none of its kernels.
fn not_ours(_: *const c_void) -> Result<NonNull<c_void>, sys::cudaError_t> {
    Err(sys::cudaError::cudaErrorInvalidDeviceFunction)
}

#[test]
fn an_entered_kernel_is_found_and_a_full_path_says_absent() {
    for n in 0..64 {
        remember(fake(n));
    }
    for n in 0..64 {
        assert!(matches!(find(fake(n).as_ptr()), Found::Handle(h) if h == fake(n)), "{n}");
    }
    // Entered twice: one entry.
    remember(fake(3));
    let copies = TABLE.iter().filter(|e| e.address.load(Ordering::Acquire) == fake(3).as_ptr()).count();
    assert_eq!(copies, 1);
    // Addresses that all start at one place: PROBES of them fit, the rest are absent with no
    // place (launched through the runtime).
    let same_home: alloc::vec::Vec<NonNull<c_void>> =
        (0x10_0000..0x100_0000usize).map(fake).filter(|a| home(a.as_ptr()) == 17).take(PROBES + 4).collect();
    assert_eq!(same_home.len(), PROBES + 4);
    for &a in &same_home {
        remember(a);
    }
    let entered = same_home.iter().filter(|a| matches!(find(a.as_ptr()), Found::Handle(_))).count();
    assert!(entered <= PROBES, "{entered}");
    assert!(same_home.iter().any(|a| matches!(find(a.as_ptr()), Found::Absent(false))));
}

/// An address that is no kernel gets no handle, every time: without a driver nothing is entered
/// (the query may succeed later); where the runtime says it is none of its kernels, it is
/// entered as launched through the runtime, and not asked about again.
#[test]
fn an_address_that_is_no_kernel_gets_no_handle() {
    static NOT_A_KERNEL: u8 = 0;
    let address = core::ptr::addr_of!(NOT_A_KERNEL).cast::<c_void>();
    assert_eq!(kernel_handle(address), None);
    match find(address) {
        Found::Absent(true) => {}
        Found::Handle(h) => assert_eq!(h, RUNTIME, "entered only as a runtime launch"),
        _ => panic!("neither absent nor entered for the runtime"),
    }
    assert_eq!(kernel_handle(address), None, "the second time too");
}

/// The runtime marker is no handle `remember` or the runtime could give; a library kernel
/// launched first as an unknown address gets its own handle once remembered.
#[test]
fn the_runtime_marker_is_never_a_handle() {
    assert_eq!(RUNTIME.as_ptr() as usize, 1);
    remember(fake(900));
    assert_eq!(kernel_handle(fake(900).as_ptr()), Some(fake(900)));
    enter(fake(901).as_ptr(), RUNTIME);
    assert_eq!(kernel_handle(fake(901).as_ptr()), None, "launched through the runtime");
    remember(fake(901));
    assert_eq!(kernel_handle(fake(901).as_ptr()), Some(fake(901)), "its own handle once remembered");
}

/// A resolver is asked at a kernel's first launch only; its handle is entered under the stub
/// and under itself, and the plain lookup finds it too.
#[test]
fn a_resolvers_handle_is_asked_once_and_entered_under_the_stub_and_itself() {
    let (stub, handle) = (fake(910), fake(911));
    let mut asked = 0;
    for _ in 0..3 {
        // SAFETY: fake addresses, never launched.
        let got = unsafe {
            kernel_handle_with(stub.as_ptr(), KEY_A, || {
                asked += 1;
                Some(handle)
            })
        };
        assert_eq!(got, Some(handle));
    }
    assert_eq!(asked, 1);
    assert_eq!(kernel_handle(stub.as_ptr()), Some(handle), "the plain lookup finds the stub");
    assert_eq!(kernel_handle(handle.as_ptr()), Some(handle), "and the handle, as its own");
}

/// An address ordo's runtime marked as none of its stubs ([`RUNTIME`], a plain launch before)
/// is asked about with a resolver: its handle replaces the marker; a resolver that fails is
/// remembered and not asked again, and the plain lookup still launches it through the runtime.
#[test]
fn a_runtime_marker_is_asked_about_once_with_a_resolver() {
    let (stub, handle) = (fake(920), fake(921));
    enter(stub.as_ptr(), RUNTIME);
    assert_eq!(kernel_handle(stub.as_ptr()), None);
    // SAFETY: fake addresses, never launched.
    assert_eq!(unsafe { kernel_handle_with(stub.as_ptr(), KEY_A, || Some(handle)) }, Some(handle));
    assert_eq!(kernel_handle(stub.as_ptr()), Some(handle));

    let refused = fake(922);
    enter(refused.as_ptr(), RUNTIME);
    let mut asked = 0;
    for _ in 0..3 {
        // SAFETY: as above.
        let got = unsafe {
            kernel_handle_with(refused.as_ptr(), KEY_A, || {
                asked += 1;
                None
            })
        };
        assert_eq!(got, None);
    }
    assert_eq!(asked, 1);
    assert!(matches!(find(refused.as_ptr()), Found::Handle(h) if h == RUNTIME));
    assert_eq!(kernel_handle(refused.as_ptr()), None, "launched through the runtime");
    // A null key is not remembered: asked at each call.
    for _ in 0..2 {
        // SAFETY: as above.
        let got = unsafe {
            kernel_handle_with(refused.as_ptr(), core::ptr::null(), || {
                asked += 1;
                None
            })
        };
        assert_eq!(got, None);
    }
    assert_eq!(asked, 3);
    // SAFETY: as above.
    assert_eq!(unsafe { kernel_handle_with(refused.as_ptr(), KEY_A, || panic!("asked again")) }, None);
    // A library's handle entered later is its own, marker or not.
    remember(refused);
    assert_eq!(kernel_handle(refused.as_ptr()), Some(refused));
}

/// A stub of a library with its own static runtime, launched first from a file of the program
/// (whose runtime, resolver A, does not know it, nor does ordo's): resolver A is not asked
/// again, but the library's own file (resolver B) resolves it, and every launch from then on,
/// A's and plain ones included, gets B's handle. Before, A's failure marked the address for
/// every resolver, and each of its launches failed for the rest of the process.
#[test]
fn a_resolver_that_failed_does_not_stop_another() {
    for (stub, handle, first_launch) in [(fake(940), fake(941), true), (fake(942), fake(943), false)] {
        if !first_launch {
            // The same after a plain launch marked it.
            enter(stub.as_ptr(), RUNTIME);
        }
        let mut asked_a = 0;
        for _ in 0..3 {
            // SAFETY: fake addresses, never launched.
            let got = unsafe {
                handle_with(
                    stub.as_ptr(),
                    KEY_A,
                    || {
                        asked_a += 1;
                        None
                    },
                    not_ours,
                )
            };
            assert_eq!(got, None, "A knows no kernel there");
        }
        assert_eq!(asked_a, 1, "A is asked once");
        assert!(matches!(find(stub.as_ptr()), Found::Handle(h) if h == RUNTIME));
        assert_eq!(kernel_handle(stub.as_ptr()), None, "a plain launch: the runtime's, not asked");
        let mut asked_b = 0;
        // SAFETY: as above.
        let got = unsafe {
            handle_with(
                stub.as_ptr(),
                KEY_B,
                || {
                    asked_b += 1;
                    Some(handle)
                },
                not_ours,
            )
        };
        assert_eq!((got, asked_b), (Some(handle), 1), "B is asked, and its handle launched");
        // SAFETY: as above.
        let from_a = unsafe { handle_with(stub.as_ptr(), KEY_A, || panic!("A asked again"), not_ours) };
        assert_eq!(from_a, Some(handle), "A's file launches B's handle");
        assert_eq!(kernel_handle(stub.as_ptr()), Some(handle), "and so does a plain launch");
        assert_eq!(kernel_handle(handle.as_ptr()), Some(handle), "and the handle, as its own");
    }
}

/// Two resolvers that both fail: each is asked again only after the other failed in between
/// (one is remembered, the last).
#[test]
fn the_last_failing_resolver_is_remembered() {
    let stub = fake(950);
    let asked = core::cell::Cell::new(0);
    let fail = || {
        asked.set(asked.get() + 1);
        None
    };
    for (key, asks) in [(KEY_A, 1), (KEY_A, 1), (KEY_B, 2), (KEY_B, 2), (KEY_A, 3), (KEY_A, 3)] {
        // SAFETY: a fake address, never launched.
        assert_eq!(unsafe { handle_with(stub.as_ptr(), key, fail, not_ours) }, None);
        assert_eq!(asked.get(), asks);
    }
}

/// A resolver that fails for an address that is no kernel: `None`, and where ordo's runtime
/// answered (a driver is there) the address is marked, so that this resolver is not asked
/// again.
#[test]
fn a_failing_resolver_falls_back_to_ordos_runtime() {
    static NOT_A_KERNEL: u8 = 0;
    let address = core::ptr::addr_of!(NOT_A_KERNEL).cast::<c_void>();
    let mut asked = 0;
    for _ in 0..3 {
        // SAFETY: a resolver that finds nothing; nothing is launched.
        let got = unsafe {
            kernel_handle_with(address, KEY_A, || {
                asked += 1;
                None
            })
        };
        assert_eq!(got, None);
    }
    match find(address) {
        // No driver here: nothing entered, asked at each call (every launch fails anyway).
        Found::Absent(true) => assert_eq!(asked, 3),
        Found::Handle(h) => assert!(h == RUNTIME && asked == 1, "{h:?} after {asked} asks"),
        _ => panic!("neither absent nor marked"),
    }
}

/// While another thread enters an address (claimed, no handle yet), the resolver's answer is
/// used and not entered.
#[test]
fn a_pending_entry_is_resolved_without_entering() {
    let (stub, handle) = (fake(930), fake(931));
    let start = home(stub.as_ptr());
    let slot = (0..PROBES)
        .map(|i| &TABLE[(start + i) & (SLOTS - 1)])
        .find(|e| e.address.compare_exchange(null_mut(), stub.as_ptr(), Ordering::AcqRel, Ordering::Acquire).is_ok())
        .unwrap();
    // SAFETY: fake addresses, never launched.
    assert_eq!(unsafe { kernel_handle_with(stub.as_ptr(), KEY_A, || Some(handle)) }, Some(handle));
    assert!(slot.handle.load(Ordering::Acquire).is_null(), "the claimant's entry is left to it");
    slot.handle.store(handle.as_ptr(), Ordering::Release);
    // SAFETY: as above.
    assert_eq!(unsafe { kernel_handle_with(stub.as_ptr(), KEY_A, || panic!("asked again")) }, Some(handle));
}

/// Runtime entries are capped: the kernels with a handle keep three quarters of the table.
/// (Counted on a counter of its own: the table's is left to the other tests, which enter
/// markers.)
#[test]
fn runtime_entries_are_capped() {
    let entered = AtomicUsize::new(0);
    let mut claimed = 0;
    while claim(&entered) {
        claimed += 1;
        assert!(claimed <= RUNTIME_ENTRIES);
    }
    assert_eq!(claimed, RUNTIME_ENTRIES);
    assert!(!claim(&entered));
    assert_eq!(entered.load(Ordering::Relaxed), RUNTIME_ENTRIES);
}
