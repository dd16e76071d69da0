//! Making a communicator from what the job's launcher gives: the ranks from its environment
//! ([`LaunchEnv`]), the unique id from `NCCL_COMM_ID`, a shared folder or the caller's store
//! ([`IdSource`]).
//!
//! ```no_run
//! use ordo_cuda_libs::nccl::{CommConfig, Nccl, Rendezvous};
//! # fn main() -> ordo_cuda_core::Result<()> {
//! // Under `torchrun --nproc-per-node 2 prog`, `srun -n 16 prog` or `mpirun -n 8 prog`:
//! let mut rendezvous = Rendezvous::from_env()?;
//! let device = rendezvous.launch().device()?;
//! let comm = rendezvous.init_rank(&Nccl::load()?, device, "world", &CommConfig::default())?;
//! # let _ = comm; Ok(()) }
//! ```

use super::exchange::{FolderStore, IdExchange, IdStore};
use super::version::{require, SAME_ID_FROM_COMM_ID};
use super::{CommConfig, Communicator, LaunchEnv, Nccl, UniqueId};
use core::time::Duration;
use ordo_cuda_core::{Device, Error, Result, UsageKind};
use std::path::PathBuf;

const CALL: &str = "Rendezvous";

/// Where the ranks get their unique ids.
pub enum IdSource {
    /// `NCCL_COMM_ID=host:port` in the process environment: NCCL 2.22 and later make the same id
    /// on every rank from it, and rank 0's communicator opens NCCL's bootstrap root at that
    /// address (of rank 0's host; a free port, not torchrun's `MASTER_PORT`, which its store
    /// holds). No exchange, no file; one id (NCCL uses no second root with it), and one
    /// communicator being made at a time (each opens its root at the same port).
    NcclCommId(String),
    /// A folder every rank reaches ([`FolderStore`]): on one host any folder, across hosts a
    /// shared filesystem. Made (owner only) if missing.
    Folder(PathBuf),
    /// The caller's store (a job's key-value store: etcd, Redis, a PMIx or torch store reached
    /// from Rust), e.g. a [`ClosureStore`](super::ClosureStore).
    Store(Box<dyn IdStore + Send>),
}

impl core::fmt::Debug for IdSource {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            IdSource::NcclCommId(a) => f.debug_tuple("NcclCommId").field(a).finish(),
            IdSource::Folder(d) => f.debug_tuple("Folder").field(d).finish(),
            IdSource::Store(_) => f.write_str("Store(..)"),
        }
    }
}

/// Whether `addr` has NCCL's form for `NCCL_COMM_ID`: `host:port` or `[ipv6]:port`.
fn comm_id_ok(addr: &str) -> bool {
    let Some((host, port)) = addr.rsplit_once(':') else { return false };
    let port_ok = port.parse::<u16>().is_ok_and(|p| p != 0);
    let host_ok = if let Some(inner) = host.strip_prefix('[') {
        inner.strip_suffix(']').is_some_and(|h| !h.is_empty())
    } else {
        !host.is_empty() && !host.contains(':')
    };
    port_ok && host_ok
}

/// A folder of this user's in the system's temporary folder (`ordo-nccl-<uid>`): files of
/// another user's runs in a shared `/tmp` could be neither replaced nor removed.
fn user_temp_dir() -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    // The owner of `/proc/self` is the process's user (Linux); elsewhere a folder shared by all.
    match std::fs::metadata("/proc/self") {
        Ok(m) => std::env::temp_dir().join(format!("ordo-nccl-{}", m.uid())),
        Err(_) => std::env::temp_dir().join("ordo-nccl"),
    }
}

impl IdSource {
    /// The source the environment names: `NCCL_COMM_ID` if set, else the folder
    /// `ORDO_NCCL_ID_DIR`, else, when the launcher says every rank runs on this host, a folder of
    /// this user's in the system's temporary folder (`ordo-nccl-<uid>`); else an error saying what
    /// to set. A folder is made (owner only) when first used.
    pub fn from_env(launch: &LaunchEnv) -> Result<IdSource> {
        IdSource::from_lookup(launch, |name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) through `lookup`.
    pub fn from_lookup(launch: &LaunchEnv, lookup: impl Fn(&str) -> Option<String>) -> Result<IdSource> {
        let value = |name: &str| lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        if let Some(addr) = value("NCCL_COMM_ID") {
            if !comm_id_ok(&addr) {
                return Err(Error::invalid(CALL, format!("NCCL_COMM_ID={addr:?} is not host:port or [ipv6]:port")));
            }
            return Ok(IdSource::NcclCommId(addr));
        }
        if let Some(dir) = value("ORDO_NCCL_ID_DIR") {
            return Ok(IdSource::Folder(PathBuf::from(dir)));
        }
        match launch.one_host() {
            Some(true) => Ok(IdSource::Folder(user_temp_dir())),
            found => Err(Error::invalid(
                CALL,
                format!(
                    "{} ranks {}: set NCCL_COMM_ID=host:port (rank 0's host and a free port; NCCL 2.22 or \
                     later) or ORDO_NCCL_ID_DIR=<a folder every host shares>",
                    launch.ranks(),
                    if found.is_some() { "on several hosts" } else { "whose hosts the launcher does not say" }
                ),
            )),
        }
    }
}

/// The ranks of a launched job and where their unique ids come from: makes communicators with no
/// argument but a name.
#[derive(Debug)]
pub struct Rendezvous {
    launch: LaunchEnv,
    source: IdSource,
    timeout: Duration,
}

impl Rendezvous {
    /// How long a rank waits for the others by default: 5 minutes (ranks of one job may start
    /// minutes apart on a busy cluster).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    /// The process environment's launcher ([`LaunchEnv::from_env`]) and id source
    /// ([`IdSource::from_env`]).
    pub fn from_env() -> Result<Rendezvous> {
        let launch = LaunchEnv::from_env()?;
        let source = IdSource::from_env(&launch)?;
        Ok(Rendezvous::new(launch, source))
    }

    /// `launch` with ids from `source`.
    pub fn new(launch: LaunchEnv, source: IdSource) -> Rendezvous {
        Rendezvous { launch, source, timeout: Rendezvous::DEFAULT_TIMEOUT }
    }

    /// The same, waiting at most `timeout` for the other ranks.
    pub fn with_timeout(self, timeout: Duration) -> Rendezvous {
        Rendezvous { timeout, ..self }
    }

    /// The ranks.
    pub fn launch(&self) -> &LaunchEnv {
        &self.launch
    }

    /// Where the ids come from.
    pub fn source(&self) -> &IdSource {
        &self.source
    }

    /// `count` unique ids for the communicator `name` (1 to 64 letters, digits, `.`, `-`, `_`; one
    /// exchange a name at a time), the same on every rank: from `NCCL_COMM_ID` (one id; NCCL 2.22
    /// or later), or exchanged ([`IdExchange`]).
    pub fn unique_ids(&mut self, nccl: &Nccl, name: &str, count: usize) -> Result<Vec<UniqueId>> {
        let exchange = IdExchange {
            name,
            job: self.launch.job(),
            rank: self.launch.rank(),
            ranks: self.launch.ranks(),
            count,
            timeout: self.timeout,
        };
        let mut make = |_| nccl.unique_id();
        match &mut self.source {
            IdSource::NcclCommId(addr) => {
                if count != 1 {
                    return Err(Error::invalid(CALL, "NCCL_COMM_ID names one bootstrap root: one id"));
                }
                require(
                    nccl.release()?,
                    SAME_ID_FROM_COMM_ID,
                    "Rendezvous::unique_ids",
                    "one id on every rank from NCCL_COMM_ID",
                )?;
                // NCCL reads the variable itself, from the process environment.
                if std::env::var("NCCL_COMM_ID").ok().as_deref().map(str::trim) != Some(addr.as_str()) {
                    return Err(Error::usage(
                        UsageKind::InvalidArgument,
                        CALL,
                        format!("NCCL_COMM_ID={addr} must be set in the process environment, where NCCL reads it"),
                    ));
                }
                Ok(vec![nccl.unique_id()?])
            }
            IdSource::Folder(dir) => {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&*dir)
                    .map_err(|e| Error::invalid(CALL, format!("cannot make the folder {}: {e}", dir.display())))?;
                exchange.run(&mut FolderStore::new(dir.clone()), &mut make)
            }
            IdSource::Store(store) => exchange.run(store.as_mut(), &mut make),
        }
    }

    /// Makes this rank's communicator `name` on `device` (`ncclCommInitRank`, or
    /// `ncclCommInitRankConfig` for a config other than the default): the ranks and the id as
    /// [`unique_ids`](Self::unique_ids) gives them. Blocks until every rank has joined.
    pub fn init_rank(&mut self, nccl: &Nccl, device: Device, name: &str, config: &CommConfig) -> Result<Communicator> {
        let ids = self.unique_ids(nccl, name, 1)?;
        let id = ids.first().ok_or_else(|| Error::invalid(CALL, "no id"))?;
        let (ranks, rank) = (self.launch.ranks(), self.launch.rank());
        if *config == CommConfig::default() {
            Communicator::init_rank(nccl, device, ranks, id, rank)
        } else {
            Communicator::init_rank_config(nccl, device, ranks, id, rank, config)
        }
    }

    /// As [`init_rank`](Self::init_rank), with `roots` ids, each made by the first rank of its
    /// block ([`Communicator::init_rank_scalable`], NCCL 2.23 and later; refused before any
    /// exchange on an older NCCL).
    pub fn init_rank_scalable(
        &mut self,
        nccl: &Nccl,
        device: Device,
        name: &str,
        roots: usize,
        config: &CommConfig,
    ) -> Result<Communicator> {
        const WHAT: &str = "Rendezvous::init_rank_scalable";
        nccl.api().init_rank_scalable.get(WHAT)?;
        let ids = self.unique_ids(nccl, name, roots)?;
        Communicator::init_rank_scalable(nccl, device, self.launch.ranks(), &ids, self.launch.rank(), config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_comm_id_takes_nccls_forms() {
        for ok in ["10.0.0.1:29501", "node-17:4000", "[fe80::1]:29501", "localhost:1"] {
            assert!(comm_id_ok(ok), "{ok}");
        }
        for bad in ["", "host", "host:", ":29500", "host:0", "host:70000", "fe80::1:29501", "[]:1", "[::1]"] {
            assert!(!comm_id_ok(bad), "{bad}");
        }
    }
}
