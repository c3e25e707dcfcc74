import Foundation

/// Channels kept in a file: Apple keeps an app's channels whatever happens to its servers, so a simulator that is
/// started again (`liverelay dev` run a second time, a restarted compose service) must know the channels it created
/// before. Without it the relay's stored channel ids were unknown to the new simulator, and the first broadcast on the
/// demo channel after a restart failed it for good (`ChannelNotRegistered`).
extension APNsSimulator {
    /// Reads the file's channels, when there is a file; one that cannot be read is said and set aside.
    func loadChannels() {
        guard let channelsFile, FileManager.default.fileExists(atPath: channelsFile.path) else { return }
        do {
            let channels = try JSONDecoder().decode([SimulatedChannel].self, from: Data(contentsOf: channelsFile))
            state.withLock { state in
                for channel in channels {
                    let key = Self.channelKey(channel.environment, channel.bundleID, channel.channelID)
                    if state.channels.updateValue(channel, forKey: key) == nil { state.channelOrder.append(key) }
                }
            }
        } catch {
            logger.warning("apns-sim: \(channelsFile.path) holds no channels it can read (\(error)); starting without")
        }
    }

    /// Writes every channel to the file (whole, replacing it), when there is a file. Under the state's lock, so two
    /// changes at once cannot leave the file with the older of the two.
    func saveChannels() {
        guard let channelsFile else { return }
        let failure: (any Error)? = state.withLock { state in
            do {
                let channels = state.channelOrder.compactMap { state.channels[$0] }
                try JSONEncoder().encode(channels).write(to: channelsFile, options: .atomic)
                return nil
            } catch {
                return error
            }
        }
        if let failure { logger.warning("apns-sim: cannot write \(channelsFile.path): \(failure)") }
    }
}
