// A stencil chunk's views live only as long as its compute callback: the input view (shared with
// the neighbouring chunks' computes, over memory that may be a temporary freed after the run)
// cannot be kept for later.
use ordo_cuda_core::pipeline::{Pipeline, Plan, RunBuffers, Schedule, Stencil, StencilChunk};
use ordo_cuda_core::{DeviceSlice, HostAllocFlags, PinnedBuffer, Stream, StreamRef};

fn main() {
    let stream = Stream::new().unwrap();
    let mut p = Pipeline::new(3).unwrap();
    let input = PinnedBuffer::<f32>::zeroed(8, HostAllocFlags::empty()).unwrap();
    let mut output = PinnedBuffer::<f32>::zeroed(4, HostAllocFlags::empty()).unwrap();
    let mut kept: Vec<DeviceSlice<'_, f32>> = Vec::new();
    let buffers = RunBuffers { input: input.pinned(), dev_in: None, dev_out: None, output: output.pinned_mut() };
    let stencil = Stencil { in_record_len: 2, out_record_len: 1, halo: 1, pool: None };
    let plan = Plan { chunks: 2, schedule: Schedule::Staged };
    let compute = |_: StreamRef<'_>, chunk: StencilChunk<'_, f32, f32>| {
        kept.push(chunk.input);
        Ok(())
    };
    let _ = unsafe { p.run_stencil(stream.as_stream(), buffers, plan, stencil, compute) };
    let _ = kept.len();
}
