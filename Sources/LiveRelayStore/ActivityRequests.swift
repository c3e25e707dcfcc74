import Foundation
import LiveRelayCore

/// A Live Activity to register (`POST /v1/live-activities`): its push token and what it shows.
public struct NewLiveActivity: Sendable {
    public var platform: Platform
    /// Nil: the activity waits for its update token, keeping (and coalescing) its state meanwhile.
    public var token: String?
    /// The app declares `NSSupportsLiveActivitiesFrequentUpdates`: twice the priority-10 budget.
    public var frequentUpdates = false
    public var bundleID: String
    public var environment: APNsEnvironment
    public var activityType: String?
    public var attributes: JSONValue?
    public var contentState: JSONValue?
    public var externalID: String?
    public var userID: String?
    public var deviceUUID: UUID?

    public init(platform: Platform, token: String?, bundleID: String, environment: APNsEnvironment,
                activityType: String? = nil, attributes: JSONValue? = nil, contentState: JSONValue? = nil,
                externalID: String? = nil, userID: String? = nil, deviceUUID: UUID? = nil) {
        self.platform = platform
        self.token = token
        self.bundleID = bundleID
        self.environment = environment
        self.activityType = activityType
        self.attributes = attributes
        self.contentState = contentState
        self.externalID = externalID
        self.userID = userID
        self.deviceUUID = deviceUUID
    }
}

/// A new state for an active Live Activity: the content-state pushed, and optionally an alert and presentation hints.
public struct LiveActivityUpdate: Sendable {
    public var contentState: JSONValue
    public var alert: JSONValue?
    public var staleDate: Date?
    public var relevanceScore: Double?
    public var priority: Int16?

    public init(contentState: JSONValue, alert: JSONValue? = nil, staleDate: Date? = nil,
                relevanceScore: Double? = nil, priority: Int16? = nil) {
        self.contentState = contentState
        self.alert = alert
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.priority = priority
    }
}

/// Which activities to list.
public struct LiveActivityFilter: Sendable {
    public var status: ActivityStatus?
    public var platform: Platform?
    public var externalID: String?
    public var userID: String?
    public var deviceUUID: UUID?
    public var limit = 100
    public var offset = 0

    public init(status: ActivityStatus? = nil, platform: Platform? = nil, externalID: String? = nil,
                userID: String? = nil, deviceUUID: UUID? = nil, limit: Int = 100, offset: Int = 0) {
        self.status = status
        self.platform = platform
        self.externalID = externalID
        self.userID = userID
        self.deviceUUID = deviceUUID
        self.limit = limit
        self.offset = offset
    }
}
