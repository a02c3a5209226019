import LogStore
import Testing
import YTKKeyValueStore

/// ``StoreOptions`` holds the engine's ``LogStore/Options``: the engine's properties read and
/// set those, the store's own (file protection, coding strategies) sit beside them.
@Suite("Store options")
struct StoreOptionsTests {
  @Test("the engine's properties are the engine's options, set either way")
  func forwarding() {
    var options = StoreOptions(
      sync: .interval(milliseconds: 50), readOnly: true, corruption: .fail,
      compaction: .whenGarbageExceeds(fraction: 0.5), maxSegmentSize: 1 << 20,
      verifyChecksumsOnRead: false, fileProtection: .complete, indexFiles: false,
      coding: CodingStrategies(dates: .iso8601))
    let engine = options.logStoreOptions
    #expect(engine.sync == .interval(milliseconds: 50))
    #expect(engine.readOnly)
    #expect(engine.corruption == .fail)
    #expect(engine.compaction == .whenGarbageExceeds(fraction: 0.5))
    #expect(engine.maxSegmentSize == 1 << 20)
    #expect(!engine.verifyChecksumsOnRead)
    #expect(!engine.indexFiles)

    options.logStoreOptions.sync = .always
    options.logStoreOptions.maxSegmentSize = 4096
    #expect(options.sync == .always)
    #expect(options.maxSegmentSize == 4096)
    options.readOnly = false
    #expect(!options.logStoreOptions.readOnly)
    #expect(options.fileProtection == .complete)
    #expect(options.coding == CodingStrategies(dates: .iso8601))
  }

  @Test("the defaults are the engine's defaults")
  func defaults() {
    let options = StoreOptions()
    let engine = LogStore.Options()
    #expect(options.sync == engine.sync)
    #expect(options.readOnly == engine.readOnly)
    #expect(options.corruption == engine.corruption)
    #expect(options.compaction == engine.compaction)
    #expect(options.maxSegmentSize == engine.maxSegmentSize)
    #expect(options.verifyChecksumsOnRead == engine.verifyChecksumsOnRead)
    #expect(options.indexFiles == engine.indexFiles)
  }

  @Test("options are equal when every property is, the engine's and the store's own")
  func equality() {
    #expect(StoreOptions() == StoreOptions())
    let changes: [(inout StoreOptions) -> Void] = [
      { $0.sync = .always }, { $0.readOnly = true }, { $0.corruption = .fail },
      { $0.compaction = .manual }, { $0.maxSegmentSize = 4096 },
      { $0.verifyChecksumsOnRead = false }, { $0.indexFiles = false },
      { $0.fileProtection = .none }, { $0.coding = CodingStrategies(keys: .snakeCase) },
    ]
    for change in changes {
      var changed = StoreOptions()
      change(&changed)
      #expect(changed != StoreOptions())
    }
  }
}
