import LiveRelayCore

extension DeliveryWorker {
    /// Sends every push through its platform's transport, the transports side by side; results in the same order.
    /// A push whose platform has no transport here is answered `rejected` with `APNsNotConfigured`/`FCMNotConfigured`.
    func deliver(_ pushes: [DeliveryPlanner.Push]) async -> [DeliveryResult] {
        var groups: [TransportKind: [Int]] = [:]
        for (index, push) in pushes.enumerated() { groups[push.delivery.platform.transport, default: []].append(index) }
        var results = [DeliveryResult?](repeating: nil, count: pushes.count)
        let transports = self.transports
        // In a fixed order, APNs first: the first child task runs first on the worker's loop.
        let sendable = TransportKind.allCases.compactMap { kind in
            groups[kind].flatMap { indices in transports[kind].map { ($0, indices) } }
        }
        if sendable.count == 1, let (transport, indices) = sendable.first {
            // One transport (the common case): no child task on the path of every push.
            let answers = await transport.deliver(indices.map { pushes[$0].delivery })
            for (index, answer) in zip(indices, answers) { results[index] = answer }
        } else {
            await withTaskGroup(of: ([Int], [DeliveryResult]).self) { group in
                for (transport, indices) in sendable {
                    let deliveries = indices.map { pushes[$0].delivery }
                    group.addTask { (indices, await transport.deliver(deliveries)) }
                }
                for await (indices, answers) in group {
                    for (index, answer) in zip(indices, answers) { results[index] = answer }
                }
            }
        }
        return zip(pushes, results).map { push, result in
            result ?? DeliveryResult(
                outcome: .rejected, error: push.delivery.platform.transport.notConfiguredReason, pushType: nil)
        }
    }
}
