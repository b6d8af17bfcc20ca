#include "model/DeviceRunAhead.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#include <chrono>
#include <thread>

namespace qs {

DeviceRunAhead::DeviceRunAhead(at::Device device, int depth) : m_device(device), m_depth(depth) {}

void DeviceRunAhead::enqueued() {
    if (m_device.is_cpu())
        return;
    // The current stream of the run's device: the one every kernel of the run was put on.
    const c10::impl::VirtualGuardImpl guard(m_device.type());
    c10::Event done(m_device.type());
    done.record(guard.getStream(m_device));
    m_pending.push_back(std::move(done));
}

void DeviceRunAhead::waitForRoom() {
    while (int(m_pending.size()) > m_depth) {
        // c10::Event::synchronize is LibTorch 2.x only; query() is in every version. A block
        // takes milliseconds at least, so polling every 50 us costs nothing measurable.
        while (!m_pending.front().query())
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        m_pending.pop_front();
    }
}

} // namespace qs
