//! Prints the CUDA toolkit the program was built with and how the build found it
//! (`ordo_cuda::sys::BUILT_WITH`), then each CUDA device's name, compute capability, SM count,
//! asyncEngineCount, concurrentManagedAccess, and the runtime and driver versions. With no driver
//! or no device it says so in one line after the first and exits non-zero.

use ordo_cuda::{device, Device};
use std::process::ExitCode;

fn version(v: u32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

fn main() -> ExitCode {
    println!("built with {}", ordo_cuda::sys::BUILT_WITH);
    let runtime = device::runtime_version().unwrap_or(0);
    let count = match device::count() {
        Ok(0) => {
            eprintln!(
                "device-info: no CUDA device (runtime {}, built against {})",
                version(runtime),
                version(ordo_cuda::sys::CUDA_VERSION)
            );
            return ExitCode::FAILURE;
        }
        Ok(n) => n,
        Err(e) => {
            eprintln!("device-info: no usable CUDA driver or device: {e}");
            return ExitCode::FAILURE;
        }
    };
    let driver = device::driver_version().unwrap_or(0);
    println!(
        "CUDA runtime {} ({runtime}), driver supports {} ({driver}); {count} device(s)",
        version(runtime),
        version(driver)
    );
    for i in 0..count {
        let d = Device::from_ordinal(i as i32);
        let describe = || -> ordo_cuda::Result<String> {
            let (major, minor) = d.compute_capability()?;
            let engines = d.async_engine_count()?;
            let (least, greatest) = d.stream_priority_range()?;
            Ok(format!(
                "device {i}: {} | compute capability {major}.{minor} | {} SMs | asyncEngineCount {engines} ({}) | \
                 concurrentManagedAccess {} | memory pools {} | stream priorities [{least}, {greatest}]",
                d.name()?,
                d.sm_count()?,
                match engines {
                    0 => "copies do not overlap compute",
                    1 => "one copy direction at a time overlaps compute",
                    _ => "H2D and D2H copies overlap each other and compute",
                },
                u8::from(d.concurrent_managed_access()?),
                u8::from(d.memory_pools_supported()?),
            ))
        };
        match describe() {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("device-info: device {i}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
