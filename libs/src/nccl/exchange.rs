//! Carrying unique ids from the ranks that make them to every rank, through a store the ranks
//! share: a folder on a shared filesystem ([`FolderStore`]) or the caller's own key-value store
//! ([`ClosureStore`]: `put(key, bytes)` / `get(key)`). ordo runs no server.
//!

use super::backoff::Backoff;
use super::scalable::first_root_rank;
use super::UniqueId;
use core::time::Duration;
use ordo_cuda_core::error::{LibraryError, Text};
use ordo_cuda_core::{Error, Result};
use std::path::{Path, PathBuf};

const CALL: &str = "exchange_unique_ids";

/// A key-value store every rank reaches, for the exchange of unique ids.
pub trait IdStore {
    /// Stores `value` under `key`, replacing what was there; a reader sees the old value or the
    /// new one, whole, never a part.
    fn put(&mut self, key: &str, value: &[u8]) -> Result<()>;
    /// The value under `key`, or `None`.
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>>;
    /// Removes `key`, if the store can (tidying only: the exchange is correct without it).
    fn remove(&mut self, key: &str) -> Result<()> {
        let _ = key;
        Ok(())
    }
}

/// A folder every rank reaches (a shared filesystem across hosts, any folder on one host): one
/// small file a key, written whole to a temporary name and renamed into place (atomic on POSIX
/// filesystems and NFS), readable by the owner only (the ids hold socket addresses).
#[derive(Debug, Clone)]
pub struct FolderStore {
    dir: PathBuf,
}

impl FolderStore {
    /// A store in `dir`, which must exist.
    pub fn new(dir: impl Into<PathBuf>) -> FolderStore {
        FolderStore { dir: dir.into() }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn io_error(&self, what: &str, path: &Path, e: &std::io::Error) -> Error {
        Error::invalid(CALL, format!("{what} {}: {e}", path.display()))
    }
}

impl IdStore for FolderStore {
    fn put(&mut self, key: &str, value: &[u8]) -> Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.dir.join(key);
        let n = nonce();
        let tmp =
            self.dir.join(format!(".{key}.{}.{:02x}{:02x}{:02x}{:02x}", std::process::id(), n[0], n[1], n[2], n[3]));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| {
                f.write_all(value)?;
                f.sync_all()
            })
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.io_error("cannot write", &path, &e));
        }
        Ok(())
    }

    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>> {
        let path = self.dir.join(key);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_error("cannot read", &path, &e)),
        }
    }

    fn remove(&mut self, key: &str) -> Result<()> {
        let path = self.dir.join(key);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io_error("cannot remove", &path, &e)),
        }
    }
}

/// The caller's store as two closures: `put(key, bytes)` (replacing, whole) and `get(key)`
/// (`None` when absent). Nothing is removed: use a store that lives as long as the job (a job's
/// own key-value store), or pass a job token that differs from run to run.
pub struct ClosureStore<P, G> {
    put: P,
    get: G,
}

impl<P, G> ClosureStore<P, G>
where
    P: FnMut(&str, &[u8]) -> Result<()>,
    G: FnMut(&str) -> Result<Option<Vec<u8>>>,
{
    /// A store of `put` and `get`.
    pub fn new(put: P, get: G) -> ClosureStore<P, G> {
        ClosureStore { put, get }
    }
}

impl<P, G> IdStore for ClosureStore<P, G>
where
    P: FnMut(&str, &[u8]) -> Result<()>,
    G: FnMut(&str) -> Result<Option<Vec<u8>>>,
{
    fn put(&mut self, key: &str, value: &[u8]) -> Result<()> {
        (self.put)(key, value)
    }

    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>> {
        (self.get)(key)
    }
}

/// 16 random bytes: the OS's (`/dev/urandom`), else a hash seeded by the standard library's
/// random keys, the time, the process and a counter.
fn nonce() -> [u8; 16] {
    use std::io::Read;
    let mut out = [0u8; 16];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut out));
    if from_os.is_ok() && out != [0u8; 16] {
        return out;
    }
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    for half in out.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        h.write_u32(std::process::id());
        h.write_u128(now);
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}

const MAGIC: &[u8; 8] = b"ordoNRV1";
const ID: u8 = 1;
const ACK: u8 = 2;
const GO: u8 = 3;
const ROOT: u8 = 4;
type Nonce = [u8; 16];

fn record(kind: u8, session: &Nonce, fields: &[u64], tail: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(MAGIC.len() + 1 + 16 + fields.len() * 8 + tail.len());
    v.extend_from_slice(MAGIC);
    v.push(kind);
    v.extend_from_slice(session);
    for f in fields {
        v.extend_from_slice(&f.to_le_bytes());
    }
    v.extend_from_slice(tail);
    v
}

/// A record of `kind` with `n` numbers: (session, numbers, the rest); `None` for anything else
/// (another kind, another format, a torn or foreign file).
fn parse(bytes: &[u8], kind: u8, n: usize) -> Option<(Nonce, Vec<u64>, &[u8])> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (&k, rest) = rest.split_first()?;
    if k != kind || rest.len() < 16 + n * 8 {
        return None;
    }
    let (session, rest) = rest.split_at(16);
    let (numbers, tail) = rest.split_at(n * 8);
    let numbers = numbers.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
    Some((session.try_into().ok()?, numbers, tail))
}

fn as_u64(v: usize) -> u64 {
    v as u64 // usize is at most 64 bits on every target ordo builds for
}

/// Names: 1 to 64 letters, digits, `.`, `-`, `_`; a job token: up to 128 of the same.
fn check_name(what: &str, name: &str, max: usize) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= max
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(CALL, format!("{what} {name:?}: 1 to {max} letters, digits, '.', '-' or '_'")))
    }
}

/// The deadline error: `ncclTimeout`, saying what was awaited.
fn timed_out(what: String) -> Error {
    Error::Library(LibraryError {
        library: "NCCL",
        call: CALL,
        status: super::api::TIMEOUT,
        detail: Some(Text::from(format!("ncclTimeout: the rendezvous deadline passed: {what}"))),
    })
}

/// The pauses between the looks of an exchange at the store: 1 ms, doubling up to 50 ms, until
/// `timeout` has passed.
fn looks(timeout: Duration) -> Backoff {
    Backoff::new(timeout, Duration::from_millis(1), Duration::from_millis(50))
}

/// Ranks listed for an error: the first few and how many.
fn list(ranks: &[usize]) -> String {
    let shown: Vec<String> = ranks.iter().take(8).map(usize::to_string).collect();
    let more = if ranks.len() > 8 { format!(" and {} more", ranks.len() - 8) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

/// One exchange of unique ids: who this rank is, which communicator, how long to wait.
///
/// # The protocol
/// Keys start with `ordo-nccl.<name>.<job>`, so communicators of different names, and jobs with
/// different tokens, never read each other's records. Within one key a record from an earlier run
/// (a crashed job, a job that reused the name) must not be taken for this run's, and a rank must not
/// start NCCL before rank 0 knows every rank has this run's id. So the exchange is a handshake in
/// which every record carries a fresh random session number:
/// 1. rank 0 tidies the key's old records, makes id 0 and puts `id` = (session `S`, ranks, id 0);
/// 2. every other rank `r` reads `id`, and puts `ack.r` = (`S`, `r`, its number of ranks, a fresh
///    random number `M_r` of its own); if `id` later changes (it had read an old one), it reads
///    the new one and acknowledges again;
/// 3. once every `ack.r` carries `S` (and the same number of ranks), rank 0 puts `go` = (`S`,
///    every `M_r`) and removes `id`;
/// 4. rank `r` is done when `go` carries `S` and its own `M_r`: a `go` left by an earlier run cannot
///    (it holds that run's numbers). It removes `ack.r`; rank 0 removes `go` once the acks are gone.
///
/// Several ids (for [`Communicator::init_rank_scalable`](super::Communicator::init_rank_scalable)):
/// after the handshake, the rank [`first_root_rank(i, ..)`](super::first_root_rank) makes id `i`
/// and puts `root.i` = (`S`, `i`, id); every rank reads each until it carries `S`. Those records
/// stay until the next exchange of the same key tidies them.
///
/// A rank that does not arrive makes the others fail at their deadline, naming what they waited
/// for, rather than NCCL waiting without end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdExchange<'a> {
    /// Tells communicators apart: 1 to 64 letters, digits, `.`, `-` or `_`.
    pub name: &'a str,
    /// Tells launches apart ([`LaunchEnv::job`](super::LaunchEnv::job)): 1 to 128 of the same.
    pub job: &'a str,
    /// This process's rank.
    pub rank: usize,
    /// The number of ranks.
    pub ranks: usize,
    /// The number of ids (1, or the roots of [`Communicator::init_rank_scalable`](super::Communicator::init_rank_scalable)).
    pub count: usize,
    /// How long to wait for the other ranks.
    pub timeout: Duration,
}

impl IdExchange<'_> {
    /// Exchanges the ids through `store` (see [the protocol](IdExchange#the-protocol)): id `i` is
    /// made by `make(i)` on rank [`first_root_rank(i, count, ranks)`](super::first_root_rank) (by
    /// rank 0 when `count` is 1) and every rank returns all of them, in order. Returns when every
    /// rank has this run's ids; the ranks that made ids must stay alive until the communicator is
    /// made (their NCCL roots run in them).
    ///
    /// Errors: bad arguments (before the store is touched); the store's; `ncclTimeout` naming
    /// what was awaited once `timeout` has passed; ranks that disagree on the number of ranks.
    pub fn run(
        &self,
        store: &mut dyn IdStore,
        make: &mut dyn FnMut(usize) -> Result<UniqueId>,
    ) -> Result<Vec<UniqueId>> {
        let IdExchange { name, job, rank, ranks, count, timeout } = *self;
        check_name("communicator name", name, 64)?;
        check_name("job token", job, 128)?;
        if ranks == 0 || rank >= ranks {
            return Err(Error::invalid(CALL, "the rank must be below the number of ranks, at least one"));
        }
        if count == 0 || count > ranks {
            return Err(Error::invalid(CALL, "between one id and one id a rank"));
        }
        if ranks == 1 {
            return (0..count).map(make).collect();
        }
        let prefix = format!("ordo-nccl.{name}.{job}");
        let keys = Keys {
            id: format!("{prefix}.id"),
            go: format!("{prefix}.go"),
            ack: |r: usize| format!("{prefix}.ack.{r}"),
            root: |i: usize| format!("{prefix}.root.{i}"),
        };
        let mut poll = looks(timeout);
        let (session, first) = if rank == 0 {
            lead(store, &keys, ranks, count, &mut poll, make)?
        } else {
            follow(store, &keys, rank, ranks, &mut poll)?
        };
        let mut ids = Vec::with_capacity(count);
        ids.push(first);
        for i in 1..count {
            if first_root_rank(i, count, ranks) == Some(rank) {
                let id = make(i)?;
                store.put(&(keys.root)(i), &record(ROOT, &session, &[as_u64(i)], &id.to_bytes()))?;
                ids.push(id);
                continue;
            }
            let key = (keys.root)(i);
            let id = loop {
                let got = store.get(&key)?;
                let fresh = got
                    .as_deref()
                    .and_then(|b| parse(b, ROOT, 1))
                    .filter(|(s, n, _)| *s == session && n[0] == as_u64(i));
                if let Some((_, _, tail)) = fresh {
                    break UniqueId::from_bytes(tail)?;
                }
                poll.sleep_or(|| {
                    timed_out(format!(
                        "rank {} did not publish id {i} at {key}",
                        first_root_rank(i, count, ranks).unwrap_or(0)
                    ))
                })?;
            };
            ids.push(id);
        }
        Ok(ids)
    }
}

struct Keys<A: Fn(usize) -> String, R: Fn(usize) -> String> {
    id: String,
    go: String,
    ack: A,
    root: R,
}

/// Rank 0's part: publish, collect every acknowledgement, confirm.
fn lead<A: Fn(usize) -> String, R: Fn(usize) -> String>(
    store: &mut dyn IdStore,
    keys: &Keys<A, R>,
    ranks: usize,
    count: usize,
    poll: &mut Backoff,
    make: &mut dyn FnMut(usize) -> Result<UniqueId>,
) -> Result<(Nonce, UniqueId)> {
    // Tidy what earlier runs of this key left (safe: no other rank acts on this run before `id`).
    store.remove(&keys.go)?;
    for r in 1..ranks {
        store.remove(&(keys.ack)(r))?;
    }
    for i in 1..count {
        store.remove(&(keys.root)(i))?;
    }
    let session = nonce();
    let id = make(0)?;
    store.put(&keys.id, &record(ID, &session, &[as_u64(ranks)], &id.to_bytes()))?;
    let mut answers: Vec<Option<[u8; 16]>> = vec![None; ranks];
    loop {
        for (r, answer) in answers.iter_mut().enumerate().skip(1).filter(|(_, a)| a.is_none()) {
            let Some(bytes) = store.get(&(keys.ack)(r))? else { continue };
            let Some((s, numbers, tail)) = parse(&bytes, ACK, 2) else { continue };
            if s != session || numbers[0] != as_u64(r) {
                continue; // an earlier run's, or a rank that read an earlier id: it will acknowledge again
            }
            if numbers[1] != as_u64(ranks) {
                return Err(Error::invalid(
                    CALL,
                    format!("rank {r} counts {} ranks, rank 0 counts {ranks}", numbers[1]),
                ));
            }
            *answer = tail.get(..16).and_then(|m| <[u8; 16]>::try_from(m).ok());
        }
        let missing: Vec<usize> = (1..ranks).filter(|&r| answers[r].is_none()).collect();
        if missing.is_empty() {
            break;
        }
        poll.sleep_or(|| {
            timed_out(format!(
                "rank 0 published its id at {}, but ranks {} did not acknowledge it",
                keys.id,
                list(&missing)
            ))
        })?;
    }
    let numbers: Vec<u8> = answers.iter().skip(1).flatten().flatten().copied().collect();
    store.put(&keys.go, &record(GO, &session, &[as_u64(ranks)], &numbers))?;
    store.remove(&keys.id)?;
    // Tidy `go` once every rank has taken it (each removes its acknowledgement); a store that
    // keeps them, or a rank that is slow to look, leaves it for the next run of the key.
    let mut tidy = looks(Duration::from_secs(2));
    loop {
        let mut left = false;
        for r in 1..ranks {
            let ack = store.get(&(keys.ack)(r))?;
            if ack.as_deref().and_then(|b| parse(b, ACK, 2)).is_some_and(|(s, _, _)| s == session) {
                left = true;
                break;
            }
        }
        if !left {
            store.remove(&keys.go)?;
            break;
        }
        if !tidy.sleep() {
            break;
        }
    }
    Ok((session, id))
}

/// Another rank's part: read `id`, acknowledge it, wait for rank 0's confirmation.
fn follow<A: Fn(usize) -> String, R: Fn(usize) -> String>(
    store: &mut dyn IdStore,
    keys: &Keys<A, R>,
    rank: usize,
    ranks: usize,
    poll: &mut Backoff,
) -> Result<(Nonce, UniqueId)> {
    let mine = nonce();
    let ack_key = (keys.ack)(rank);
    let mut taken: Option<(Nonce, UniqueId, u64)> = None;
    loop {
        if let Some((s, numbers, tail)) =
            store.get(&keys.id)?.as_deref().and_then(|b| parse(b, ID, 1)).map(|(s, n, t)| (s, n, t.to_vec()))
        {
            if !matches!(&taken, Some((t, _, _)) if *t == s) {
                let id = UniqueId::from_bytes(&tail)?;
                store.put(&ack_key, &record(ACK, &s, &[as_u64(rank), as_u64(ranks)], &mine))?;
                taken = Some((s, id, numbers[0]));
            }
        }
        if let Some((session, id, _)) = &taken {
            let go = store.get(&keys.go)?;
            if let Some((s, numbers, tail)) = go.as_deref().and_then(|b| parse(b, GO, 1)) {
                let confirmed = s == *session
                    && numbers[0] == as_u64(ranks)
                    && tail.chunks_exact(16).nth(rank - 1).is_some_and(|m| m == mine);
                if confirmed {
                    let done = (*session, *id);
                    store.remove(&ack_key)?;
                    return Ok(done);
                }
            }
        }
        poll.sleep_or(|| {
            timed_out(match &taken {
                None => format!("rank {rank} found no id from rank 0 at {}", keys.id),
                Some((_, _, theirs)) if *theirs != as_u64(ranks) => format!(
                    "rank {rank} (of {ranks}) acknowledged an id for {theirs} ranks at {}; rank 0 never confirmed it",
                    keys.id
                ),
                Some(_) => {
                    format!("rank {rank} acknowledged rank 0's id; rank 0 never confirmed every rank at {}", keys.go)
                }
            })
        })?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_foreign_bytes_are_not_records() {
        let s = [7u8; 16];
        let r = record(ACK, &s, &[3, 8], &[9u8; 16]);
        let (session, numbers, tail) = parse(&r, ACK, 2).unwrap();
        assert_eq!((session, numbers, tail), (s, vec![3, 8], &[9u8; 16][..]));
        assert!(parse(&r, GO, 2).is_none(), "another kind");
        assert!(parse(&r[..20], ACK, 2).is_none(), "torn");
        assert!(parse(b"hello, this is not a record at all", ACK, 0).is_none());
        assert!(parse(&[], ID, 0).is_none());
        assert_ne!(nonce(), nonce());
    }

    #[test]
    fn names_and_arguments_are_checked_before_the_store_is_touched() {
        struct Untouchable;
        impl IdStore for Untouchable {
            fn put(&mut self, _: &str, _: &[u8]) -> Result<()> {
                panic!("touched")
            }
            fn get(&mut self, _: &str) -> Result<Option<Vec<u8>>> {
                panic!("touched")
            }
        }
        let mut make = |_| UniqueId::from_bytes(&[1; 128]);
        let t = Duration::from_secs(1);
        for (name, job, rank, ranks, count, why) in [
            ("", "j", 0, 2, 1, "communicator name"),
            ("a/b", "j", 0, 2, 1, "communicator name"),
            (&"n".repeat(65) as &str, "j", 0, 2, 1, "communicator name"),
            ("world", "", 0, 2, 1, "job token"),
            ("world", "j j", 0, 2, 1, "job token"),
            ("world", "j", 2, 2, 1, "below the number of ranks"),
            ("world", "j", 0, 0, 1, "below the number of ranks"),
            ("world", "j", 0, 2, 0, "one id"),
            ("world", "j", 0, 2, 3, "one id"),
        ] {
            let e =
                IdExchange { name, job, rank, ranks, count, timeout: t }.run(&mut Untouchable, &mut make).unwrap_err();
            assert!(e.to_string().contains(why), "{name:?} {job:?}: {e}");
        }
        // One rank: no store, every id made here.
        let mut n = 0;
        let one = IdExchange { name: "w", job: "j", rank: 0, ranks: 1, count: 1, timeout: t };
        let ids = one
            .run(&mut Untouchable, &mut |_| {
                n += 1;
                UniqueId::from_bytes(&[5; 128])
            })
            .unwrap();
        assert_eq!((ids.len(), n), (1, 1));
    }
}
