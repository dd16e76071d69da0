//! Where this process stands among the ranks, read from the environment its launcher set:
//! torchrun, Slurm's `srun`, or Open MPI's `mpirun`. ordo runs no launcher and no store of its
//! own; it reads what the launcher already wrote. See [`LaunchEnv`] for the variables read.

use ordo_cuda_core::{Device, Error, Result};

const CALL: &str = "LaunchEnv";

/// The program that started this process as one rank of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Launcher {
    /// PyTorch's `torchrun` (`torch.distributed.run`).
    Torchrun,
    /// Slurm's `srun`.
    Slurm,
    /// Open MPI's `mpirun` / `mpiexec`.
    OpenMpi,
}

impl Launcher {
    /// The variables (rank, ranks, local rank) whose presence names this launcher.
    const fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Launcher::Torchrun => ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
            Launcher::Slurm => ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
            Launcher::OpenMpi => ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
        }
    }
}

/// This process's place in a job, as its launcher described it.
///
/// | launcher | rank | ranks | local rank | read too |
/// | --- | --- | --- | --- | --- |
/// | torchrun | `RANK` | `WORLD_SIZE` | `LOCAL_RANK` | `LOCAL_WORLD_SIZE`, `GROUP_WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`, `TORCHELASTIC_RUN_ID`, `TORCHELASTIC_RESTART_COUNT` |
/// | Slurm (`srun`) | `SLURM_PROCID` | `SLURM_STEP_NUM_TASKS`, else `SLURM_NTASKS`, else `SLURM_NPROCS` | `SLURM_LOCALID` | `SLURM_STEP_NUM_NODES` / `SLURM_NNODES`, `SLURM_JOB_ID`, `SLURM_STEP_ID` |
/// | Open MPI (`mpirun`) | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` | `OMPI_COMM_WORLD_LOCAL_SIZE`, `OMPI_MCA_ess_base_jobid` / `PMIX_NAMESPACE` |
///
/// Where several are present (torchrun inside a Slurm job, mpirun inside an allocation), the
/// launcher that started this process directly wins: torchrun, then Open MPI, then Slurm.
///
/// The environment comes through a lookup function ([`LaunchEnv::from_lookup`]), so that it can
/// be tested, or taken from somewhere else than the process environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchEnv {
    launcher: Launcher,
    rank: usize,
    ranks: usize,
    local_rank: usize,
    local_ranks: Option<usize>,
    hosts: Option<usize>,
    master: Option<(String, u16)>,
    job: String,
}

/// A variable's value, trimmed; `None` when unset or empty.
fn text(lookup: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// A variable holding a whole number; `None` when unset.
fn number(lookup: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<usize>> {
    let Some(v) = text(lookup, name) else { return Ok(None) };
    if !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid(CALL, format!("{name}={v:?} is not a whole number")));
    }
    v.parse::<usize>().map(Some).map_err(|_| Error::invalid(CALL, format!("{name}={v:?} is too large")))
}

fn required(lookup: &dyn Fn(&str) -> Option<String>, launcher: &str, name: &str, set: &str) -> Result<usize> {
    number(lookup, name)?
        .ok_or_else(|| Error::invalid(CALL, format!("{launcher}: {set} is set but {name} is missing or empty")))
}

/// The rank, the number of ranks, the local rank (each required once the launcher's rank or
/// number of ranks is set) and the number of local ranks, from the variables `names` of
/// `launcher`, in that order.
fn counts(
    lookup: &dyn Fn(&str) -> Option<String>,
    launcher: &str,
    [rank, ranks, local_rank, local_ranks]: [&str; 4],
) -> Result<(usize, usize, usize, Option<usize>)> {
    let set = format!("{rank} or {ranks}");
    Ok((
        required(lookup, launcher, rank, &set)?,
        required(lookup, launcher, ranks, &set)?,
        required(lookup, launcher, local_rank, &set)?,
        number(lookup, local_ranks)?,
    ))
}

/// A token naming one launch for file names: letters, digits, `.`, `-` and `_` only.
fn token(parts: &[Option<String>]) -> String {
    let joined: Vec<String> = parts.iter().flatten().cloned().collect();
    let s: String = joined
        .join(".")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' })
        .take(96)
        .collect();
    if s.is_empty() {
        "job".to_owned()
    } else {
        s
    }
}

impl LaunchEnv {
    /// Reads the process environment ([`from_lookup`](Self::from_lookup) with `std::env::var`).
    pub fn from_env() -> Result<LaunchEnv> {
        LaunchEnv::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the launcher's variables through `lookup` (a variable's value, or `None` when
    /// unset), choosing the launcher by which variables are set (see [`LaunchEnv`]).
    /// A missing, malformed or inconsistent variable is an
    /// [`InvalidArgument`](ordo_cuda_core::UsageKind::InvalidArgument) error naming it; none of
    /// the launchers' variables at all is one too.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<LaunchEnv> {
        let lookup: &dyn Fn(&str) -> Option<String> = &lookup;
        let present = |l: Launcher| {
            let (rank, ranks, _) = l.names();
            text(lookup, rank).is_some() || text(lookup, ranks).is_some()
        };
        let launcher = [Launcher::Torchrun, Launcher::OpenMpi, Launcher::Slurm].into_iter().find(|&l| present(l));
        match launcher {
            Some(l) => LaunchEnv::for_launcher(l, lookup),
            None => Err(Error::invalid(
                CALL,
                "no launcher's variables: RANK and WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK and \
                 OMPI_COMM_WORLD_SIZE (mpirun) and SLURM_PROCID (srun) are all unset",
            )),
        }
    }

    /// Reads `launcher`'s variables through `lookup`, whatever else is set.
    pub fn for_launcher(launcher: Launcher, lookup: impl Fn(&str) -> Option<String>) -> Result<LaunchEnv> {
        let lookup: &dyn Fn(&str) -> Option<String> = &lookup;
        let env = match launcher {
            Launcher::Torchrun => torchrun(lookup)?,
            Launcher::Slurm => slurm(lookup)?,
            Launcher::OpenMpi => open_mpi(lookup)?,
        };
        env.check()?;
        Ok(env)
    }

    fn check(&self) -> Result<()> {
        let (rank_name, ranks_name, local_name) = self.launcher.names();
        if self.ranks == 0 {
            return Err(Error::invalid(CALL, format!("{ranks_name} is 0: a job has at least one rank")));
        }
        if self.rank >= self.ranks {
            return Err(Error::invalid(
                CALL,
                format!("{rank_name}={} is not below {ranks_name}={}", self.rank, self.ranks),
            ));
        }
        if self.local_rank >= self.ranks {
            return Err(Error::invalid(
                CALL,
                format!("{local_name}={} is not below {ranks_name}={}", self.local_rank, self.ranks),
            ));
        }
        if let Some(local) = self.local_ranks {
            if self.local_rank >= local || local > self.ranks {
                return Err(Error::invalid(
                    CALL,
                    format!(
                        "inconsistent: local rank {} of {local} ranks on this host, {} ranks in all",
                        self.local_rank, self.ranks
                    ),
                ));
            }
        }
        if let Some(hosts) = self.hosts {
            if hosts == 0 || hosts > self.ranks {
                return Err(Error::invalid(CALL, format!("inconsistent: {hosts} hosts for {} ranks", self.ranks)));
            }
        }
        Ok(())
    }

    /// The launcher whose variables were read.
    pub fn launcher(&self) -> Launcher {
        self.launcher
    }

    /// This process's rank, from 0.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks (the world size).
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// This process's rank among those on its host, from 0.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// The number of ranks on this host, where the launcher says.
    pub fn local_ranks(&self) -> Option<usize> {
        self.local_ranks
    }

    /// Whether every rank runs on this host: `None` where the launcher does not say.
    pub fn one_host(&self) -> Option<bool> {
        match (self.local_ranks, self.hosts) {
            (Some(local), _) if local == self.ranks => Some(true),
            (_, Some(1)) => Some(true),
            (Some(_), _) | (_, Some(_)) => Some(false),
            (None, None) => None,
        }
    }

    /// torchrun's `MASTER_ADDR` and `MASTER_PORT` (the address of its own store, busy with it).
    pub fn master(&self) -> Option<(&str, u16)> {
        self.master.as_ref().map(|(host, port)| (host.as_str(), *port))
    }

    /// A token the same on every rank of this launch and, where the launcher gives one, different
    /// from other launches: Slurm's job and step, Open MPI's job, torchrun's run id, store address
    /// and restart count. Letters, digits, `.`, `-` and `_` only.
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The CUDA device of this rank among `visible` devices: the local rank where each process
    /// sees every device of its host, device 0 where each sees one (Slurm's `--gpus-per-task=1`,
    /// or `CUDA_VISIBLE_DEVICES` set per rank). An error where the host has fewer devices than
    /// ranks.
    pub fn device_among(&self, visible: usize) -> Result<Device> {
        let ordinal = match visible {
            0 => return Err(Error::invalid(CALL, "no CUDA device is visible to this process")),
            1 => 0,
            n if self.local_rank < n => self.local_rank,
            n => {
                return Err(Error::invalid(
                    CALL,
                    format!("local rank {} but {n} CUDA devices are visible: one device a rank", self.local_rank),
                ))
            }
        };
        // Below `visible`, which CUDA counts in an int.
        Ok(Device::from_ordinal(ordinal as i32))
    }

    /// [`device_among`](Self::device_among) the devices CUDA sees (`cudaGetDeviceCount`).
    pub fn device(&self) -> Result<Device> {
        self.device_among(ordo_cuda_core::device::count()?)
    }
}

fn torchrun(lookup: &dyn Fn(&str) -> Option<String>) -> Result<LaunchEnv> {
    let names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"];
    let (rank, ranks, local_rank, local_ranks) = counts(lookup, "torchrun", names)?;
    let hosts = number(lookup, "GROUP_WORLD_SIZE")?;
    let master = match (text(lookup, "MASTER_ADDR"), text(lookup, "MASTER_PORT")) {
        (None, None) => None,
        (Some(host), Some(port)) => {
            let port = port
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| Error::invalid(CALL, format!("MASTER_PORT={port:?} is not a port (1 to 65535)")))?;
            Some((host, port))
        }
        (Some(_), None) => return Err(Error::invalid(CALL, "torchrun: MASTER_ADDR is set but MASTER_PORT is not")),
        (None, Some(_)) => return Err(Error::invalid(CALL, "torchrun: MASTER_PORT is set but MASTER_ADDR is not")),
    };
    let run_id = text(lookup, "TORCHELASTIC_RUN_ID");
    let job = token(&[
        Some("torchrun".to_owned()),
        run_id,
        master.as_ref().map(|(h, p)| format!("{h}-{p}")),
        text(lookup, "TORCHELASTIC_RESTART_COUNT").map(|c| format!("r{c}")),
    ]);
    Ok(LaunchEnv { launcher: Launcher::Torchrun, rank, ranks, local_rank, local_ranks, hosts, master, job })
}

fn slurm(lookup: &dyn Fn(&str) -> Option<String>) -> Result<LaunchEnv> {
    const WHO: &str = "srun";
    let rank = required(lookup, WHO, "SLURM_PROCID", "SLURM_PROCID")?;
    let ntasks = number(lookup, "SLURM_NTASKS")?;
    let nprocs = number(lookup, "SLURM_NPROCS")?;
    if let (Some(a), Some(b)) = (ntasks, nprocs) {
        if a != b {
            return Err(Error::invalid(CALL, format!("inconsistent: SLURM_NTASKS={a} but SLURM_NPROCS={b}")));
        }
    }
    // A step's own count first: a step may run fewer tasks than its job holds.
    let ranks = number(lookup, "SLURM_STEP_NUM_TASKS")?.or(ntasks).or(nprocs).ok_or_else(|| {
        Error::invalid(CALL, "srun: SLURM_PROCID is set but none of SLURM_STEP_NUM_TASKS, SLURM_NTASKS, SLURM_NPROCS")
    })?;
    let local_rank = required(lookup, WHO, "SLURM_LOCALID", "SLURM_PROCID")?;
    let hosts = match number(lookup, "SLURM_STEP_NUM_NODES")? {
        Some(n) => Some(n),
        None => number(lookup, "SLURM_NNODES")?,
    };
    let job = token(&[
        Some("slurm".to_owned()),
        text(lookup, "SLURM_JOB_ID").or_else(|| text(lookup, "SLURM_JOBID")),
        text(lookup, "SLURM_STEP_ID").or_else(|| text(lookup, "SLURM_STEPID")),
    ]);
    Ok(LaunchEnv { launcher: Launcher::Slurm, rank, ranks, local_rank, local_ranks: None, hosts, master: None, job })
}

fn open_mpi(lookup: &dyn Fn(&str) -> Option<String>) -> Result<LaunchEnv> {
    let names =
        ["OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"];
    let (rank, ranks, local_rank, local_ranks) = counts(lookup, "mpirun", names)?;
    let job = token(&[
        Some("ompi".to_owned()),
        text(lookup, "OMPI_MCA_ess_base_jobid").or_else(|| text(lookup, "PMIX_NAMESPACE")),
    ]);
    Ok(LaunchEnv { launcher: Launcher::OpenMpi, rank, ranks, local_rank, local_ranks, hosts: None, master: None, job })
}
