//! Bandwidth of collectives as nccl-tests reports it (`doc/PERFORMANCE.md` of nccl-tests).
//!
//! *Algorithm bandwidth* is the bytes of one rank's buffer over the time; *bus bandwidth*
//! scales it by how much of the data each rank must move over its links, so that it reads
//! against the hardware's link bandwidth whatever the number of ranks. For `n` ranks: all-reduce
//! `2(n-1)/n`; all-gather and reduce-scatter `(n-1)/n` (of the full, gathered size); broadcast,
//! reduce and send/recv 1.

/// A collective, for its bus-bandwidth factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// All-reduce: factor `2(n-1)/n`.
    AllReduce,
    /// All-gather (bytes: the gathered size): factor `(n-1)/n`.
    AllGather,
    /// Reduce-scatter (bytes: the size before scattering): factor `(n-1)/n`.
    ReduceScatter,
    /// Broadcast: factor 1.
    Broadcast,
    /// Reduce: factor 1.
    Reduce,
    /// Send/receive between two ranks: factor 1.
    SendRecv,
}

impl Collective {
    /// The factor from algorithm to bus bandwidth for `ranks` ranks (0 ranks: 0).
    pub fn bus_factor(self, ranks: usize) -> f64 {
        if ranks == 0 {
            return 0.0;
        }
        let n = ranks as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather | Collective::ReduceScatter => (n - 1.0) / n,
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
        }
    }
}

/// `(algbw, busbw)` in GB/s (10^9 bytes a second) for `bytes` moved in `seconds` by `ranks`
/// ranks; zero when `seconds` is not positive.
pub fn bandwidth_gbps(collective: Collective, bytes: u64, seconds: f64, ranks: usize) -> (f64, f64) {
    if seconds <= 0.0 || seconds.is_nan() {
        return (0.0, 0.0);
    }
    let algbw = bytes as f64 / seconds / 1e9;
    (algbw, algbw * collective.bus_factor(ranks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_bandwidth_follows_nccl_tests() {
        // 1 GiB all-reduced in 10 ms on 2 ranks: algbw 107.37 GB/s, busbw the same (2*1/2).
        let (alg, bus) = bandwidth_gbps(Collective::AllReduce, 1 << 30, 0.010, 2);
        assert!((alg - 107.374_182_4).abs() < 1e-6, "{alg}");
        assert!((bus - alg).abs() < 1e-9);
        // 8 ranks: 2*7/8 = 1.75.
        let (alg, bus) = bandwidth_gbps(Collective::AllReduce, 8_000_000_000, 1.0, 8);
        assert_eq!((alg, bus), (8.0, 14.0));
        assert_eq!(Collective::AllGather.bus_factor(4), 0.75);
        assert_eq!(Collective::ReduceScatter.bus_factor(1), 0.0, "one rank moves nothing");
        assert_eq!(Collective::Broadcast.bus_factor(8), 1.0);
        assert_eq!(Collective::AllReduce.bus_factor(0), 0.0);
        assert_eq!(bandwidth_gbps(Collective::AllReduce, 8, 0.0, 2), (0.0, 0.0));
        assert_eq!(bandwidth_gbps(Collective::AllReduce, 8, f64::NAN, 2), (0.0, 0.0));
    }
}
