/// One attempt in the delivery log.
package struct DeliveryAttempt: Sendable, Equatable {
    package var time: Int64
    package var eventID: String
    package var type: String
    package var userID: UInt64
    package var endpoint: String
    /// The endpoint's HTTP status; nil when it could not be reached.
    package var status: Int?
    package var error: String?
    package var milliseconds: Int

    package init(
        time: Int64, eventID: String, type: String, userID: UInt64, endpoint: String, status: Int?, error: String?, milliseconds: Int
    ) {
        self.time = time
        self.eventID = eventID
        self.type = type
        self.userID = userID
        self.endpoint = endpoint
        self.status = status
        self.error = error
        self.milliseconds = milliseconds
    }
}
