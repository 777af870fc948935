import ArgumentParser
import Foundation
import Threads

extension ServiceGroup {
    /// Starts the command's services, or ends the command: when one cannot start (the group has
    /// logged it and stopped the others), says which on standard error and exits 71 (`EX_OSERR`:
    /// the system refused a thread).
    /// - Parameter command: the subcommand, as the message names it (`serve`, `jobs`).
    func startOrExit(command: String) throws {
        do {
            try start()
        } catch {
            FileHandle.standardError.write(Data("siwa \(command): \(String(reflecting: error)); stopping\n".utf8))
            throw ExitCode(71)
        }
    }
}
