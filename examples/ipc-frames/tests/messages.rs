//! The messages between the two processes: every kind round-trips through its bytes and through a
//! socket (a descriptor with it, too), and truncated, overlong or unknown bytes are refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_ipc_frames::wire::{self, Frame, Message, Setup, WireError, MAX_MESSAGE};
use std::io::Write;
use std::os::unix::net::UnixStream;

fn every_kind() -> Vec<Message> {
    let setup = Setup { frame_bytes: 16 << 20, slots: 4, max_frames: 400 };
    let frame = Frame { seq: 3, index: 1 << 33, slot: 2, started_ns: u64::MAX - 1, latency: true };
    vec![
        Message::SetupIpc(setup),
        Message::SetupPinned(Setup { slots: 1, ..setup }),
        Message::Handle((0..80u8).collect()),
        Message::Ready,
        Message::Frame(frame),
        Message::Frame(Frame { latency: false, ..frame }),
        Message::Free { seq: 9, slot: 1, done_ns: 123_456_789 },
        Message::Drain,
        Message::Drained { done_ns: 5, checked: 800, wrong: 1 },
        Message::Teardown,
        Message::TornDown,
        Message::Released,
        Message::Quit,
        Message::Failed("cudaIpcOpenMemHandle: invalid argument — é".into()),
    ]
}

#[test]
fn every_message_round_trips_through_its_bytes() {
    for m in every_kind() {
        assert_eq!(Message::decode(&m.encode()).unwrap(), m);
        let framed = m.framed();
        assert_eq!(u32::from_le_bytes(framed[..4].try_into().unwrap()) as usize, framed.len() - 4);
    }
}

#[test]
fn a_truncated_or_overlong_message_is_refused() {
    for m in every_kind() {
        let bytes = m.encode();
        // A handle's or a failure's bytes are the rest of the message: any length is one.
        if matches!(m, Message::Handle(_) | Message::Failed(_)) {
            continue;
        }
        for cut in 0..bytes.len() {
            let e = Message::decode(&bytes[..cut]).expect_err(&format!("{m:?} cut at {cut}"));
            assert!(matches!(e, WireError::Malformed(_)), "{e}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(Message::decode(&longer), Err(WireError::Malformed(_))), "{m:?} with a byte more");
    }
    assert!(matches!(Message::decode(&[200]), Err(WireError::Malformed(_))), "unknown tag");
    let mut frame = Message::Frame(Frame { seq: 0, index: 0, slot: 0, started_ns: 0, latency: true }).encode();
    *frame.last_mut().unwrap() = 2;
    assert!(matches!(Message::decode(&frame), Err(WireError::Malformed(_))), "a flag of 2");
    assert!(matches!(Message::decode(&[13, 0xff]), Err(WireError::Malformed(_))), "a failure not in UTF-8");
}

#[test]
fn messages_cross_a_socket_and_a_cut_stream_is_refused() {
    let (mut a, mut b) = UnixStream::pair().unwrap();
    for m in every_kind() {
        wire::send(&mut a, &m).unwrap();
        assert_eq!(wire::recv(&mut b).unwrap(), m);
    }
    // A length past the limit, and an empty message.
    a.write_all(&((MAX_MESSAGE as u32) + 1).to_le_bytes()).unwrap();
    assert!(matches!(wire::recv(&mut b), Err(WireError::Malformed(_))));
    a.write_all(&0u32.to_le_bytes()).unwrap();
    assert!(matches!(wire::recv(&mut b), Err(WireError::Malformed(_))));
    // A message cut short by the sender's exit.
    let framed = Message::Drained { done_ns: 1, checked: 2, wrong: 0 }.framed();
    a.write_all(&framed[..framed.len() - 3]).unwrap();
    drop(a);
    assert!(matches!(wire::recv(&mut b), Err(WireError::Closed)));
}

#[test]
fn a_silent_peer_times_out_instead_of_hanging() {
    let (_a, mut b) = UnixStream::pair().unwrap();
    b.set_read_timeout(Some(std::time::Duration::from_millis(20))).unwrap();
    let e = wire::recv(&mut b).unwrap_err();
    assert!(e.to_string().contains("sent nothing in time"), "{e}");
}

#[test]
fn a_descriptor_travels_with_its_message() {
    let (a, mut b) = UnixStream::pair().unwrap();
    let file = std::fs::File::open("/dev/null").unwrap();
    let setup = Message::SetupPinned(Setup { frame_bytes: 4096, slots: 2, max_frames: 8 });
    wire::send_with_fd(&a, &setup, &file).unwrap();
    wire::send(&mut &a, &Message::Quit).unwrap();
    let (m, fd) = wire::recv_with_fd(&mut b).unwrap();
    assert_eq!((m, fd.is_some()), (setup, true));
    let (m, fd) = wire::recv_with_fd(&mut b).unwrap();
    assert_eq!((m, fd.is_none()), (Message::Quit, true));
    drop(a);
    assert!(matches!(wire::recv_with_fd(&mut b), Err(WireError::Closed)));
}
