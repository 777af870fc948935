internal import CMariaDB

/// A server-side prepared statement with its result bindings.
///
/// Owns the `MYSQL_STMT` (closed in `deinit` with `mysql_stmt_close`) and the result columns the
/// library writes into on fetch. Confined to the connection's thread; `Connection` is its only user.
final class PreparedStatement {
    private let statement: UnsafeMutablePointer<MYSQL_STMT>
    let parameterCount: Int
    /// The result's columns: known at prepare for a statement, only after execution for a compound
    /// statement (`BEGIN NOT ATOMIC ... END`), whose result comes from a `SELECT` inside it.
    private var columns: ResultColumns?
    /// Whether the prepare gave no columns: a statement without a result, or a compound statement,
    /// whose columns are read and bound after each execution that returns a result.
    private let columnsUnknownAtPrepare: Bool

    /// Prepares `sql` on `connection` (borrowed; must outlive the statement).
    /// - Throws: `MariaDBError` from `mysql_stmt_prepare`.
    init(connection: UnsafeMutablePointer<MYSQL>, sql: String) throws {
        guard let statement = mysql_stmt_init(connection) else {
            throw MariaDBError(connection: connection)
        }
        let prepared = sql.withCString { mysql_stmt_prepare(statement, $0, UInt(sql.utf8.count)) }
        guard prepared == 0 else {
            let error = PreparedStatement.error(of: statement)
            mysql_stmt_close(statement)
            throw error
        }
        self.statement = statement
        parameterCount = Int(mysql_stmt_param_count(statement))
        do {
            columns = try ResultColumns(of: statement)
        } catch {
            mysql_stmt_close(statement)
            throw error
        }
        columnsUnknownAtPrepare = columns == nil
    }

    deinit {
        mysql_stmt_close(statement)
    }

    /// Binds `values`, executes, and reads the whole result set, then any further results (a
    /// compound statement ends with its own status).
    /// - Returns: the rows (empty for statements without a result) and what the statement changed.
    /// - Throws: `MariaDBError` with the statement's errno and SQLSTATE.
    func execute(_ values: [Value]) throws -> (rows: [Row], result: ExecutionResult) {
        guard values.count == parameterCount else {
            throw MariaDBError(.misuse, message: "expected \(parameterCount) binds, got \(values.count)")
        }
        try withParameterBinds(values) { binds in
            if parameterCount > 0 && mysql_stmt_bind_param(statement, binds) != 0 {
                throw PreparedStatement.error(of: statement)
            }
            if mysql_stmt_execute(statement) != 0 {
                throw PreparedStatement.error(of: statement)
            }
        }
        if columnsUnknownAtPrepare && mysql_stmt_field_count(statement) > 0 {
            if columns == nil { columns = try ResultColumns(of: statement) }
            try columns?.bind(to: statement)
        }
        guard let columns, mysql_stmt_field_count(statement) > 0 else {
            let result = ExecutionResult(
                affectedRows: mysql_stmt_affected_rows(statement), lastInsertID: mysql_stmt_insert_id(statement))
            try skipFurtherResults()
            return ([], result)
        }
        let rows = try columns.readAll(from: statement)
        try skipFurtherResults()
        return (rows, ExecutionResult(affectedRows: 0, lastInsertID: 0))
    }

    /// Reads past the results that follow the first (the final status of a compound statement),
    /// so that the connection is ready for its next command.
    private func skipFurtherResults() throws {
        while mysql_stmt_more_results(statement) != 0 {
            let next = mysql_stmt_next_result(statement)
            if next == -1 { return }
            guard next == 0 else { throw PreparedStatement.error(of: statement) }
            if mysql_stmt_field_count(statement) > 0 {
                mysql_stmt_free_result(statement)
            }
        }
    }

    /// Executes the statement once for each of `rows` (its binds, in parameter order), all in one
    /// round trip: MariaDB's array binding (`STMT_ATTR_ARRAY_SIZE`, sent as COM_STMT_BULK_EXECUTE),
    /// which an `INSERT` runs as a single statement of many rows. Only for statements without a result.
    /// - Returns: the rows changed by all executions together.
    /// - Throws: `MariaDBError`: `.misuse` for a statement with a result or without binds, a row of the
    ///   wrong length or a column whose values are of different kinds; the server's error when any row fails.
    func executeBatch(_ rows: [[Value]]) throws -> ExecutionResult {
        precondition(!rows.isEmpty, "an empty batch is not sent")
        guard columns == nil else { throw MariaDBError(.misuse, message: "a statement with a result cannot run as a batch") }
        guard parameterCount > 0 else { throw MariaDBError(.misuse, message: "a statement without binds cannot run as a batch") }
        if let wrong = rows.first(where: { $0.count != parameterCount }) {
            throw MariaDBError(.misuse, message: "expected rows of \(parameterCount) binds, got \(wrong.count)")
        }
        try withBatchBinds(rows) { binds in
            var size = UInt32(rows.count)
            defer {
                // Back to single executions, for a later `execute` of the same statement.
                var single: UInt32 = 0
                mysql_stmt_attr_set(statement, STMT_ATTR_ARRAY_SIZE, &single)
            }
            if mysql_stmt_attr_set(statement, STMT_ATTR_ARRAY_SIZE, &size) != 0 || mysql_stmt_bind_param(statement, binds) != 0
                || mysql_stmt_execute(statement) != 0
            {
                throw PreparedStatement.error(of: statement)
            }
        }
        return ExecutionResult(affectedRows: mysql_stmt_affected_rows(statement), lastInsertID: 0)
    }

    /// Builds the parameter `MYSQL_BIND` array and buffers, valid only inside `body`.
    private func withParameterBinds(_ values: [Value], _ body: (UnsafeMutablePointer<MYSQL_BIND>) throws -> Void) throws {
        let binds = UnsafeMutablePointer<MYSQL_BIND>.allocate(capacity: max(values.count, 1))
        binds.initialize(repeating: MYSQL_BIND(), count: max(values.count, 1))
        var storage: [UnsafeMutableRawPointer] = []
        defer {
            for buffer in storage { buffer.deallocate() }
            binds.deallocate()
        }
        func store<T>(_ value: T, type: enum_field_types, index: Int) {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<T>.size, alignment: 8)
            buffer.storeBytes(of: value, as: T.self)
            storage.append(buffer)
            binds[index].buffer_type = type
            binds[index].buffer = buffer
            binds[index].buffer_length = UInt(MemoryLayout<T>.size)
        }
        func store(bytes: some Collection<UInt8>, type: enum_field_types, index: Int) {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
            UnsafeMutableRawBufferPointer(start: buffer, count: bytes.count).copyBytes(from: bytes)
            storage.append(buffer)
            binds[index].buffer_type = type
            binds[index].buffer = buffer
            binds[index].buffer_length = UInt(bytes.count)
        }
        for (index, value) in values.enumerated() {
            switch value {
            case .null: binds[index].buffer_type = MYSQL_TYPE_NULL
            case .int(let int): store(int, type: MYSQL_TYPE_LONGLONG, index: index)
            case .uint(let uint):
                store(uint, type: MYSQL_TYPE_LONGLONG, index: index)
                binds[index].is_unsigned = 1
            case .double(let double): store(double, type: MYSQL_TYPE_DOUBLE, index: index)
            case .text(let text): store(bytes: text.utf8, type: MYSQL_TYPE_STRING, index: index)
            case .blob(let bytes): store(bytes: bytes, type: MYSQL_TYPE_BLOB, index: index)
            }
        }
        try body(binds)
    }

    /// Builds column-wise array binds of `rows` (all of `parameterCount` values), valid only inside
    /// `body`: per parameter, one contiguous array of its values (8 bytes each for numbers; pointers and
    /// lengths into one byte buffer for text and blobs) and one indicator per row for NULLs.
    private func withBatchBinds(_ rows: [[Value]], _ body: (UnsafeMutablePointer<MYSQL_BIND>) throws -> Void) throws {
        let count = rows.count
        let binds = UnsafeMutablePointer<MYSQL_BIND>.allocate(capacity: parameterCount)
        binds.initialize(repeating: MYSQL_BIND(), count: parameterCount)
        var storage: [UnsafeMutableRawPointer] = []
        defer {
            for buffer in storage { buffer.deallocate() }
            binds.deallocate()
        }
        func allocate<T>(_ type: T.Type, _ elements: Int) -> UnsafeMutablePointer<T> {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(elements, 1) * MemoryLayout<T>.stride, alignment: 8)
            storage.append(buffer)
            return buffer.bindMemory(to: T.self, capacity: max(elements, 1))
        }
        for column in 0..<parameterCount {
            let indicators = allocate(CChar.self, count)
            binds[column].u.indicator = indicators
            var kind: Value?
            for (row, values) in rows.enumerated() {
                let value = values[column]
                indicators[row] = value == .null ? CChar(STMT_INDICATOR_NULL.rawValue) : CChar(STMT_INDICATOR_NONE.rawValue)
                guard value != .null else { continue }
                if let kind, !PreparedStatement.sameKind(kind, value) {
                    throw MariaDBError(.misuse, message: "parameter \(column + 1) mixes kinds of values in one batch")
                }
                kind = kind ?? value
            }
            switch kind {
            case nil, .int, .uint:
                // Unsigned when any value is: then no value may be negative.
                let unsigned = rows.contains { if case .uint = $0[column] { true } else { false } }
                let numbers = allocate(UInt64.self, count)
                for (row, values) in rows.enumerated() {
                    switch values[column] {
                    case .int(let int):
                        guard !unsigned || int >= 0 else {
                            throw MariaDBError(.misuse, message: "parameter \(column + 1) mixes negative and unsigned values")
                        }
                        numbers[row] = UInt64(bitPattern: int)
                    case .uint(let uint): numbers[row] = uint
                    default: numbers[row] = 0
                    }
                }
                binds[column].buffer_type = MYSQL_TYPE_LONGLONG
                binds[column].is_unsigned = unsigned ? 1 : 0
                binds[column].buffer = UnsafeMutableRawPointer(numbers)
            case .double:
                let numbers = allocate(Double.self, count)
                for (row, values) in rows.enumerated() {
                    if case .double(let double) = values[column] { numbers[row] = double } else { numbers[row] = 0 }
                }
                binds[column].buffer_type = MYSQL_TYPE_DOUBLE
                binds[column].buffer = UnsafeMutableRawPointer(numbers)
            case .text, .blob:
                let total = rows.reduce(0) { total, values in
                    switch values[column] {
                    case .text(let text): total + text.utf8.count
                    case .blob(let bytes): total + bytes.count
                    default: total
                    }
                }
                let bytes = allocate(UInt8.self, total)
                let pointers = allocate(UnsafeRawPointer?.self, count)
                let lengths = allocate(UInt.self, count)
                var offset = 0
                for (row, values) in rows.enumerated() {
                    let target = UnsafeMutableRawBufferPointer(start: bytes + offset, count: total - offset)
                    var length = 0
                    switch values[column] {
                    case .text(let text):
                        length = text.utf8.count
                        target.copyBytes(from: text.utf8)
                    case .blob(let blob):
                        length = blob.count
                        target.copyBytes(from: blob)
                    default: break
                    }
                    pointers[row] = UnsafeRawPointer(bytes + offset)
                    lengths[row] = UInt(length)
                    offset += length
                }
                if case .blob = kind { binds[column].buffer_type = MYSQL_TYPE_BLOB } else { binds[column].buffer_type = MYSQL_TYPE_STRING }
                binds[column].buffer = UnsafeMutableRawPointer(pointers)
                binds[column].length = lengths
            case .null:
                preconditionFailure("a NULL does not set a column's kind")
            }
        }
        try body(binds)
    }

    /// Whether two values bind to the same column type (integers of either sign together).
    private static func sameKind(_ first: Value, _ second: Value) -> Bool {
        switch (first, second) {
        case (.int, .int), (.int, .uint), (.uint, .int), (.uint, .uint), (.double, .double), (.text, .text), (.blob, .blob): true
        default: false
        }
    }

    /// The statement's error, read right after the failing call (docs/ARCHITECTURE.md, "Layers").
    static func error(of statement: UnsafeMutablePointer<MYSQL_STMT>, file: String = #fileID, line: Int = #line) -> MariaDBError {
        MariaDBError(
            errno: mysql_stmt_errno(statement), sqlState: String(cString: mysql_stmt_sqlstate(statement)),
            message: String(cString: mysql_stmt_error(statement)), file: file, line: line)
    }
}

/// The columns of a statement's result and the `MYSQL_BIND` array and buffers that the library
/// writes each fetched row into, at stable addresses; freed in `deinit`.
private final class ResultColumns {
    enum Kind {
        case signed, unsigned, double, text, blob
    }

    private let kinds: [Kind]
    private let names: ColumnNames
    private let binds: UnsafeMutablePointer<MYSQL_BIND>
    private let lengths: UnsafeMutablePointer<UInt>
    private let nulls: UnsafeMutablePointer<my_bool>
    private let truncations: UnsafeMutablePointer<my_bool>
    private let buffers: [UnsafeMutableRawPointer]
    private let capacities: [Int]

    /// The columns of `statement`'s result, bound to it; nil when its metadata has none (yet).
    init?(of statement: UnsafeMutablePointer<MYSQL_STMT>) throws {
        guard let metadata = mysql_stmt_result_metadata(statement) else { return nil }
        defer { mysql_free_result(metadata) }
        let count = Int(mysql_num_fields(metadata))
        let fields = mysql_fetch_fields(metadata)!
        var kinds: [Kind] = []
        var names: [String] = []
        var capacities: [Int] = []
        for index in 0..<count {
            let field = fields[index]
            names.append(String(cString: field.name))
            let kind = Self.kind(of: field)
            kinds.append(kind)
            switch kind {
            case .signed, .unsigned, .double: capacities.append(8)
            case .text, .blob: capacities.append(max(16, min(Int(field.length), 512)))
            }
        }
        self.kinds = kinds
        self.names = ColumnNames(names)
        self.capacities = capacities
        binds = .allocate(capacity: max(count, 1))
        binds.initialize(repeating: MYSQL_BIND(), count: max(count, 1))
        lengths = .allocate(capacity: max(count, 1))
        lengths.initialize(repeating: 0, count: max(count, 1))
        nulls = .allocate(capacity: max(count, 1))
        nulls.initialize(repeating: 0, count: max(count, 1))
        truncations = .allocate(capacity: max(count, 1))
        truncations.initialize(repeating: 0, count: max(count, 1))
        buffers = capacities.map { UnsafeMutableRawPointer.allocate(byteCount: $0, alignment: 8) }
        for index in 0..<count {
            binds[index].buffer_type =
                switch kinds[index] {
                case .signed, .unsigned: MYSQL_TYPE_LONGLONG
                case .double: MYSQL_TYPE_DOUBLE
                case .text: MYSQL_TYPE_STRING
                case .blob: MYSQL_TYPE_BLOB
                }
            binds[index].is_unsigned = kinds[index] == .unsigned ? 1 : 0
            binds[index].buffer = buffers[index]
            binds[index].buffer_length = UInt(capacities[index])
            binds[index].length = lengths + index
            binds[index].is_null = nulls + index
            binds[index].error = truncations + index
        }
        if count > 0 { try bind(to: statement) }
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
        binds.deallocate()
        lengths.deallocate()
        nulls.deallocate()
        truncations.deallocate()
    }

    /// Makes the library fetch `statement`'s rows into these buffers (`mysql_stmt_bind_result`).
    func bind(to statement: UnsafeMutablePointer<MYSQL_STMT>) throws {
        if mysql_stmt_bind_result(statement, binds) != 0 {
            throw PreparedStatement.error(of: statement)
        }
    }

    /// Stores and fetches every row of `statement`'s current result, then frees it.
    func readAll(from statement: UnsafeMutablePointer<MYSQL_STMT>) throws -> [Row] {
        defer { mysql_stmt_free_result(statement) }
        guard mysql_stmt_store_result(statement) == 0 else {
            throw PreparedStatement.error(of: statement)
        }
        var rows: [Row] = []
        rows.reserveCapacity(Int(mysql_stmt_num_rows(statement)))
        while true {
            let status = mysql_stmt_fetch(statement)
            if status == MYSQL_NO_DATA { break }
            guard status == 0 || status == MYSQL_DATA_TRUNCATED else {
                throw PreparedStatement.error(of: statement)
            }
            rows.append(Row(values: try (0..<kinds.count).map { try readColumn($0, of: statement) }, columns: names))
        }
        return rows
    }

    private static func kind(of field: MYSQL_FIELD) -> Kind {
        let unsigned = field.flags & UInt32(UNSIGNED_FLAG) != 0
        switch field.type {
        case MYSQL_TYPE_TINY, MYSQL_TYPE_SHORT, MYSQL_TYPE_LONG, MYSQL_TYPE_LONGLONG, MYSQL_TYPE_INT24,
            MYSQL_TYPE_YEAR, MYSQL_TYPE_BIT:
            return unsigned ? .unsigned : .signed
        case MYSQL_TYPE_FLOAT, MYSQL_TYPE_DOUBLE:
            return .double
        case MYSQL_TYPE_TINY_BLOB, MYSQL_TYPE_MEDIUM_BLOB, MYSQL_TYPE_LONG_BLOB, MYSQL_TYPE_BLOB,
            MYSQL_TYPE_STRING, MYSQL_TYPE_VAR_STRING, MYSQL_TYPE_VARCHAR:
            // Character set 63 is `binary`: BINARY, VARBINARY and BLOB columns.
            return field.charsetnr == 63 ? .blob : .text
        default:
            // DECIMAL, DATE, DATETIME, TIMESTAMP, JSON: the library converts them to text.
            return .text
        }
    }

    private func readColumn(_ index: Int, of statement: UnsafeMutablePointer<MYSQL_STMT>) throws -> Value {
        if nulls[index] != 0 { return .null }
        switch kinds[index] {
        case .signed:
            return .int(buffers[index].load(as: Int64.self))
        case .unsigned:
            let value = buffers[index].load(as: UInt64.self)
            return value <= UInt64(Int64.max) ? .int(Int64(value)) : .uint(value)
        case .double:
            return .double(buffers[index].load(as: Double.self))
        case .text, .blob:
            let length = Int(lengths[index])
            var bytes: [UInt8]
            if length <= capacities[index] {
                bytes = Array(UnsafeRawBufferPointer(start: buffers[index], count: length))
            } else {
                // The column is longer than its buffer: fetch it again into a buffer of its full length.
                bytes = [UInt8](repeating: 0, count: length)
                try bytes.withUnsafeMutableBytes { target in
                    var bind = MYSQL_BIND()
                    var fetched: UInt = 0
                    bind.buffer_type = binds[index].buffer_type
                    bind.buffer = target.baseAddress
                    bind.buffer_length = UInt(length)
                    try withUnsafeMutablePointer(to: &fetched) { fetchedLength in
                        bind.length = fetchedLength
                        if mysql_stmt_fetch_column(statement, &bind, UInt32(index), 0) != 0 {
                            throw PreparedStatement.error(of: statement)
                        }
                    }
                }
            }
            return kinds[index] == .blob ? .blob(bytes) : .text(String(decoding: bytes, as: UTF8.self))
        }
    }
}
