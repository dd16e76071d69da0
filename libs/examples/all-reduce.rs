//! One all-reduce over the ranks a launcher started, with no arguments: the ranks from the
//! launcher's environment, the unique id through `NCCL_COMM_ID`, `ORDO_NCCL_ID_DIR` or (all ranks on
//! one host) the temporary folder, one communicator, 16 MiB of `f32` summed over the ranks and
//! checked on every rank. Rank 0 prints one line; a rank whose sums are wrong prints why and exits
//! with status 1.
//!
//! ```text
//! NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node 2 --no-python ./all-reduce
//! srun --nodes 2 --ntasks-per-node 2 --gpus-per-node 2 env ORDO_NCCL_ID_DIR=$HOME/.ordo-ids ./all-reduce
//! mpirun -n 2 ./all-reduce
//! ```
//!
//! (`docs/many-hosts.md` has the Slurm job script.)

#[cfg(feature = "nccl")]
fn run() -> Result<Option<String>, Box<dyn std::error::Error>> {
    use ordo_cuda_core::memory::copy;
    use ordo_cuda_core::{DeviceBuffer, Stream};
    use ordo_cuda_libs::nccl::{CommConfig, Nccl, ReduceOp, Rendezvous};
    use std::time::Duration;

    const N: usize = 1 << 22;
    let value = |rank: usize, i: usize| ((i * 7 + rank * 3) % 11 + 1) as f32; // exact sums in f32

    let mut rendezvous = Rendezvous::from_env()?;
    let launch = rendezvous.launch().clone();
    let (rank, ranks) = (launch.rank(), launch.ranks());
    let device = launch.device()?;
    device.set_current()?;
    let nccl = Nccl::load()?;
    let comm = rendezvous.init_rank(&nccl, device, "all-reduce-example", &CommConfig::default())?;

    let stream = Stream::new()?;
    let s = stream.as_stream();
    let host: Vec<f32> = (0..N).map(|i| value(rank, i)).collect();
    let mut send = DeviceBuffer::<f32>::alloc_async(N, s)?;
    copy::h2d_blocking(send.as_mut_slice(), &host, s)?;
    let mut recv = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    // SAFETY: both buffers are this device's memory, freed on `s` after the collective; every rank
    // makes this one call, with the same count, type and operation.
    unsafe { comm.all_reduce(send.as_slice(), recv.as_mut_slice(), ReduceOp::Sum, s)? };
    comm.wait(s, Duration::from_secs(120))?;
    let mut got = vec![0f32; N];
    copy::d2h_blocking(&mut got, recv.as_slice(), s)?;

    let wrong = (0..N).filter(|&i| got[i] != (0..ranks).map(|r| value(r, i)).sum::<f32>()).count();
    if wrong > 0 {
        return Err(format!("rank {rank}: {wrong} of {N} sums differ from the CPU's").into());
    }
    Ok((rank == 0).then(|| {
        format!(
            "all-reduce: {ranks} ranks ({:?}), {N} f32 summed on every rank: right (NCCL {}, rank 0 on device {})",
            launch.launcher(),
            nccl.release().map_or_else(|e| e.to_string(), |v| v.to_string()),
            device.ordinal()
        )
    }))
}

#[cfg(not(feature = "nccl"))]
fn run() -> Result<Option<String>, Box<dyn std::error::Error>> {
    Err("built without the `nccl` feature".into())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(line) => {
            if let Some(line) = line {
                println!("{line}");
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("all-reduce: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
