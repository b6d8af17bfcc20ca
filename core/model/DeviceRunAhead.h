#pragma once

#include <ATen/ATen.h>
#include <c10/core/Event.h>

#include <deque>

namespace qs {

// How far the host may run ahead of an asynchronous device while it streams blocks.
//
// On CUDA the host only enqueues a block's kernels; it then loads the next block's weights while
// they run (the weights go through pinned staging and copy without waiting, loadTensor in
// DecoderModel.cpp). An evaluation reads nothing back until its end, so without a bound the host
// would stage every block ahead of the device and pinned host memory would grow to the whole
// model. This keeps at most `depth` enqueued blocks unfinished when the next one is loaded:
// loading overlaps one block's compute and memory stays about one block. On the CPU (where
// every operation has finished when it returns) it does nothing.
class DeviceRunAhead {
public:
    explicit DeviceRunAhead(at::Device device, int depth = 1);
    // After a block's work has been enqueued.
    void enqueued();
    // Before the next block is loaded: waits until no more than `depth` blocks are unfinished.
    void waitForRoom();

private:
    at::Device m_device;
    int m_depth;
    std::deque<c10::Event> m_pending;
};

} // namespace qs
