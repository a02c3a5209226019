/// A token of SQL text, as SQLite's tokenizer splits it: enough to read `CREATE TABLE`
/// statements. Whitespace and comments (`-- ...`, `/* ... */`) separate tokens and are dropped.
struct SQLToken {
  enum Kind: Equatable {
    /// A bare word: a keyword or a name.
    case word
    /// A name in `"..."`, `` `...` `` or `[...]`.
    case quotedName
    /// A string literal in `'...'`.
    case string
    case number
    /// `x'...'`.
    case blob
    /// Any other single character: `(`, `)`, `,`, `.`, `-`, `+`, ...
    case punctuation
  }

  var kind: Kind
  /// The token's value: a word as written, a quoted name or string without its quotes (and
  /// doubled quotes made single), a blob literal's hex digits, a number as written.
  var text: String
  /// Where the token is in the statement's UTF-8 bytes.
  var range: Range<Int>

  /// Whether this is the bare word `keyword`, in any case.
  func isKeyword(_ keyword: String) -> Bool {
    kind == .word && equalsIgnoringASCIICase(text, keyword)
  }

  /// Whether this is punctuation `character`.
  func isPunctuation(_ character: UInt8) -> Bool {
    kind == .punctuation && range.count == 1 && text.utf8.first == character
  }

  /// Whether the token can name a table or column: a word, a quoted name or a string.
  var isName: Bool { kind == .word || kind == .quotedName || kind == .string }
}

@inline(__always)
func asciiUppercase(_ byte: UInt8) -> UInt8 {
  byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") ? byte - 32 : byte
}

/// Whether `a` and `b` are equal with ASCII letters compared without case: how SQLite
/// compares keywords and the names of tables and columns.
func equalsIgnoringASCIICase(_ a: String, _ b: String) -> Bool {
  a.utf8.count == b.utf8.count
    && zip(a.utf8, b.utf8).allSatisfy { asciiUppercase($0) == asciiUppercase($1) }
}

/// Splits `sql` into tokens; nil when a quote or blob literal is not closed.
func tokenizeSQL(_ sql: [UInt8]) -> [SQLToken]? {
  var tokens: [SQLToken] = []
  var index = 0
  func isWordByte(_ byte: UInt8) -> Bool {
    byte >= 0x80 || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
      || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
      || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
      || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
  }
  func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
  func byte(_ at: Int) -> UInt8? { at < sql.count ? sql[at] : nil }
  func token(_ kind: SQLToken.Kind, _ range: Range<Int>) -> SQLToken {
    SQLToken(kind: kind, text: String(decoding: sql[range], as: UTF8.self), range: range)
  }
  /// The end of a quoted run starting at `start` (the opening quote), and its text.
  func quoted(from start: Int, closing: UInt8, doubled: Bool) -> (end: Int, text: String)? {
    var text: [UInt8] = []
    var at = start + 1
    while at < sql.count {
      if sql[at] == closing {
        if doubled, byte(at + 1) == closing {
          text.append(closing)
          at += 2
          continue
        }
        return (at + 1, String(decoding: text, as: UTF8.self))
      }
      text.append(sql[at])
      at += 1
    }
    return nil
  }

  while index < sql.count {
    let start = index
    let first = sql[index]
    switch first {
    case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), 0x0C, UInt8(ascii: "\r"):
      index += 1
      continue
    case UInt8(ascii: "-") where byte(index + 1) == UInt8(ascii: "-"):
      while index < sql.count, sql[index] != UInt8(ascii: "\n") { index += 1 }
      continue
    case UInt8(ascii: "/") where byte(index + 1) == UInt8(ascii: "*"):
      index += 2
      while index < sql.count,
        !(sql[index] == UInt8(ascii: "*") && byte(index + 1) == UInt8(ascii: "/"))
      {
        index += 1
      }
      index = min(index + 2, sql.count)
      continue
    case UInt8(ascii: "'"):
      guard let (end, text) = quoted(from: index, closing: first, doubled: true) else { return nil }
      tokens.append(SQLToken(kind: .string, text: text, range: start..<end))
      index = end
    case UInt8(ascii: "\""), UInt8(ascii: "`"):
      guard let (end, text) = quoted(from: index, closing: first, doubled: true) else { return nil }
      tokens.append(SQLToken(kind: .quotedName, text: text, range: start..<end))
      index = end
    case UInt8(ascii: "["):
      guard let (end, text) = quoted(from: index, closing: UInt8(ascii: "]"), doubled: false)
      else { return nil }
      tokens.append(SQLToken(kind: .quotedName, text: text, range: start..<end))
      index = end
    case _ where first | 0x20 == UInt8(ascii: "x") && byte(index + 1) == UInt8(ascii: "'"):
      guard let (end, text) = quoted(from: index + 1, closing: UInt8(ascii: "'"), doubled: false)
      else { return nil }
      tokens.append(SQLToken(kind: .blob, text: text, range: start..<end))
      index = end
    case _
    where isDigit(first) || (first == UInt8(ascii: ".") && byte(index + 1).map(isDigit) == true):
      // Digits, a fraction and an exponent, or a hexadecimal 0x...: runs of word bytes and
      // dots, with a sign after a decimal number's exponent e.
      let hexadecimal = first == UInt8(ascii: "0") && byte(index + 1).map { $0 | 0x20 } == 0x78
      index += 1
      while let next = byte(index) {
        let sign = next == UInt8(ascii: "+") || next == UInt8(ascii: "-")
        guard
          isWordByte(next) || next == UInt8(ascii: ".")
            || (sign && !hexadecimal && sql[index - 1] | 0x20 == UInt8(ascii: "e"))
        else { break }
        index += 1
      }
      tokens.append(token(.number, start..<index))
    case _ where isWordByte(first):
      while let next = byte(index), isWordByte(next) { index += 1 }
      tokens.append(token(.word, start..<index))
    default:
      index += 1
      tokens.append(token(.punctuation, start..<index))
    }
  }
  return tokens
}
