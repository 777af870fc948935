import AccountData
import SyncRules

/// One page of what changed: items in order, whether more follow, and the last item's place.
struct SyncPage {
    struct Entry {
        var version: UInt64
        var position: SyncCursor.Position
        var index: Int
    }

    var progress: [LessonProgress] = []
    var achievements: [AchievementProgress] = []
    var records: [CollectionRecord] = []
    var more: Bool
    var last: (version: UInt64, position: SyncCursor.Position)?
}

extension SyncStoredState {
    /// What changed after `cursor`, at most `limit` items and about `bytes` bytes
    /// (`SyncCursor.pageBytes`), ordered by version, then list, then key.
    func changed(after cursor: SyncCursor, limit: Int, bytes: Int = SyncCursor.pageBytes) -> SyncPage {
        var entries: [SyncPage.Entry] = []
        func include(_ version: UInt64, _ list: Int, _ key: @autoclosure () -> String, _ index: Int) {
            guard version >= cursor.version else { return }
            let position = SyncCursor.Position(list: list, key: key())
            if version == cursor.version {
                guard let after = cursor.position, position > after else { return }
            }
            entries.append(SyncPage.Entry(version: version, position: position, index: index))
        }
        let lessons = Array(self.lessons.values)
        for (index, lesson) in lessons.enumerated() {
            include(lesson.version, 0, lesson.item.beliefSystemID + "\u{0}" + lesson.item.lessonID, index)
        }
        let achievements = Array(self.achievements.values)
        for (index, achievement) in achievements.enumerated() { include(achievement.version, 1, achievement.item.achievementID, index) }
        let records = self.records.map { Array($0.values) }
        for (collection, list) in records.enumerated() {
            for (index, record) in list.enumerated() { include(record.version, 2 + collection, record.item.key, index) }
        }
        entries.sort { ($0.version, $0.position) < ($1.version, $1.position) }
        var page = SyncPage(more: entries.count > limit)
        var pageBytes = 0
        for (number, entry) in entries.prefix(limit).enumerated() {
            let size = entry.position.list < 2 ? SyncCursor.itemBytes : records[entry.position.list - 2][entry.index].bytes
            if number > 0 && pageBytes + size > bytes {
                page.more = true
                break
            }
            pageBytes += size
            switch entry.position.list {
            case 0: page.progress.append(lessons[entry.index].item)
            case 1: page.achievements.append(achievements[entry.index].item)
            default:
                let collection = entry.position.list - 2
                page.records.append(CollectionRecord(collection: collection, record: records[collection][entry.index].item))
            }
            page.last = (entry.version, entry.position)
        }
        return page
    }
}
