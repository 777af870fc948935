/// A record of a collection the app declares: one of the app's own `Codable` structs, whose
/// members are the collection's key fields and fields, in plain Swift types.
///
/// ```swift
/// struct Workout: SyncedRecord {
///     static var collection: String { "workouts" }
///     var workoutId: String
///     var note: String?
///     var distance: Int64?
///     var laps: Int64
///     var tags: Set<String>
/// }
/// ```
///
/// A "latest wins" field is its value (the client stamps it with the time and this device's id when
/// it changes); a counter is its total, which the client raises by what this device added (a
/// counter never goes down); a set is a `Set<String>` or an array; a field with no value is nil.
/// Members the collection does not declare are neither sent nor stored.
public protocol SyncedRecord: Codable, Sendable {
    /// The name of the declared collection the record belongs to.
    static var collection: String { get }
}
