import YTKKeyValueStore

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Fuzz target body: the Codable encoder against the path it replaces.
///
/// What parses as JSON is encoded through `JSONValue`'s Codable conformance twice: with
/// `StoredJSONEncoder`, and with `JSONEncoder` followed by the reader and the canonical
/// writer (what `put(encodable:)` did before). The two must give the same bytes, or both
/// fail.
package func fuzzStoredJSONEncoder(_ data: UnsafeRawBufferPointer) {
  guard let value = try? JSONReader.parse(data) else { return }
  let ours = try? StoredJSONEncoder.encode(value)
  let expected = try? JSONWriter.bytes(JSONReader.parse(Array(JSONEncoder().encode(value))))
  precondition(
    ours == expected,
    """
    StoredJSONEncoder gave \(ours.map { String(decoding: $0, as: UTF8.self) } ?? "an error"), \
    JSONEncoder with the reader and writer \
    \(expected.map { String(decoding: $0, as: UTF8.self) } ?? "an error")
    """)
}
