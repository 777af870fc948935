import FastCGI
import Synchronization
import Testing
import Threads

@Suite struct TerminationSignalsTests {
    @Test("The signal thread's service stops and joins without a signal, and its action does not run")
    func stopsWithoutSignal() throws {
        // As `siwa serve` does first: the signal thread, started from here, inherits the mask.
        TerminationSignals.block()
        let acted = Atomic<Bool>(false)
        let service = TerminationSignals.service { _ in acted.store(true, ordering: .relaxed) }
        try service.start()
        // Returns only once the thread has ended: its `sigwait` took the stop's SIGTERM.
        service.stopAndJoin()
        let didAct = acted.load(ordering: .relaxed)
        #expect(!didAct)
    }
}
