// `import YTKKeyValueStore` also gives the engine's types that appear in this API
// (`SyncPolicy`, `CorruptionPolicy`, `CompactionPolicy`, `StoreStatistics`) and the
// byte-level `LogStore` itself.
@_exported import LogStore
