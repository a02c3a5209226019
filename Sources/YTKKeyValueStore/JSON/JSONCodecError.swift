/// A failure to read or write JSON text.
///
/// `message` is a whole sentence a person can act on; for the reader it ends with the byte
/// offset ("expected ':' after object key at offset 17"). `offset` is that same byte offset
/// into the input, or 0 for the writer, which has no input.
///
/// The codec is `package`, not public: the store and the `ytkkv` tool share it, users see
/// only ``JSONValue`` and `KeyValueStoreError`.
package struct JSONCodecError: Error, Sendable, Equatable, CustomStringConvertible {
  package var message: String
  package var offset: Int

  package var description: String { message }
}
