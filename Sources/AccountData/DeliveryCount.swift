/// How many deliveries an endpoint has in one state.
package struct DeliveryCount: Sendable, Equatable {
    package var endpoint: String
    package var state: String
    package var count: Int
    /// When the oldest of them was recorded (Unix seconds).
    package var oldest: Int64

    package init(endpoint: String, state: String, count: Int, oldest: Int64) {
        self.endpoint = endpoint
        self.state = state
        self.count = count
        self.oldest = oldest
    }
}
