/// What a `CREATE TABLE` statement says about a table's columns, as far as reading its rows
/// needs: names, declared types, the primary key (for the rowid alias), defaults (for rows
/// written before a column was added), generated columns, and `WITHOUT ROWID`.
struct TableDefinition {
  struct Column {
    var name: String
    /// The type as written, possibly several words and a size: `"VARCHAR(10)"`, `""`.
    var declaredType: String
    /// The declared type is one token, `INTEGER` in any case: the only type whose primary
    /// key is the rowid.
    var isIntegerType: Bool
    var isPrimaryKey = false
    var isPrimaryKeyDescending = false
    var defaultValue: DefaultExpression = .none
    var generated: Generated?
  }

  enum Generated {
    case stored
    case virtual
  }

  /// A column's `DEFAULT`, as written.
  enum DefaultExpression: Equatable {
    case none
    case null
    case number(String, negative: Bool)
    case string(String)
    case blob(hex: String)
    case boolean(Bool)
    /// Anything else (an expression in parentheses, `CURRENT_TIMESTAMP`, ...): its SQL.
    case expression(String)
  }

  var columns: [Column] = []
  var isVirtual = false
  var isWithoutRowid = false
  /// The columns of a table constraint `PRIMARY KEY (...)`, by name.
  var tablePrimaryKey: [String] = []
}

/// Reads `CREATE TABLE` and `CREATE VIRTUAL TABLE` statements as stored in `sqlite_schema`.
struct CreateTableParser {
  struct Failure: Error {
    var reason: String
  }

  private let sql: [UInt8]
  private let tokens: [SQLToken]
  private var position = 0

  /// Keywords that end a column's type and begin a column constraint.
  private static let constraintKeywords: Set<String> = [
    "CONSTRAINT", "PRIMARY", "NOT", "NULL", "UNIQUE", "CHECK", "DEFAULT", "COLLATE",
    "REFERENCES", "GENERATED", "AS",
  ]
  /// Keywords that begin a table constraint.
  private static let tableConstraintKeywords: Set<String> = [
    "CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN",
  ]

  static func parse(_ sql: String) throws -> TableDefinition {
    let bytes = Array(sql.utf8)
    guard let tokens = tokenizeSQL(bytes) else {
      throw Failure(reason: "a quoted name or literal is not closed")
    }
    var parser = CreateTableParser(sql: bytes, tokens: tokens)
    return try parser.parseStatement()
  }

  private init(sql: [UInt8], tokens: [SQLToken]) {
    self.sql = sql
    self.tokens = tokens
  }

  private var current: SQLToken? { position < tokens.count ? tokens[position] : nil }

  private func isKeyword(_ keyword: String, at offset: Int = 0) -> Bool {
    position + offset < tokens.count && tokens[position + offset].isKeyword(keyword)
  }

  private func isPunctuation(_ character: Character) -> Bool {
    current?.isPunctuation(character.asciiValue ?? 0) == true
  }

  private mutating func expectKeyword(_ keyword: String) throws {
    guard isKeyword(keyword) else { throw Failure(reason: "expected \(keyword)") }
    position += 1
  }

  /// The uppercased word at the current position, if it is a bare word.
  private var currentKeyword: String? {
    guard let token = current, token.kind == .word else { return nil }
    return String(decoding: token.text.utf8.map(asciiUppercase), as: UTF8.self)
  }

  /// Skips a parenthesised group starting at the current `(`.
  private mutating func skipParentheses() throws {
    var depth = 0
    while let token = current {
      position += 1
      if token.isPunctuation(UInt8(ascii: "(")) {
        depth += 1
      } else if token.isPunctuation(UInt8(ascii: ")")) {
        depth -= 1
        if depth == 0 { return }
      }
    }
    throw Failure(reason: "a parenthesis is not closed")
  }

  private mutating func parseStatement() throws -> TableDefinition {
    var definition = TableDefinition()
    try expectKeyword("CREATE")
    if isKeyword("TEMP") || isKeyword("TEMPORARY") { position += 1 }
    if isKeyword("VIRTUAL") {
      definition.isVirtual = true
      return definition
    }
    try expectKeyword("TABLE")
    if isKeyword("IF") {
      position += 1
      try expectKeyword("NOT")
      try expectKeyword("EXISTS")
    }
    guard current?.isName == true else { throw Failure(reason: "expected the table's name") }
    position += 1
    if isPunctuation(".") { position += 2 }
    guard isPunctuation("(") else {
      throw Failure(reason: "expected the column list after the table's name")
    }
    position += 1
    while true {
      if let keyword = currentKeyword, Self.tableConstraintKeywords.contains(keyword) {
        try parseTableConstraint(into: &definition)
      } else {
        definition.columns.append(try parseColumn())
      }
      guard let token = current else { throw Failure(reason: "the column list is not closed") }
      position += 1
      if token.isPunctuation(UInt8(ascii: ")")) { break }
      guard token.isPunctuation(UInt8(ascii: ",")) else {
        throw Failure(reason: "unexpected \"\(token.text)\" in the column list")
      }
    }
    while current != nil {
      if isKeyword("WITHOUT") && isKeyword("ROWID", at: 1) {
        definition.isWithoutRowid = true
        position += 2
      } else {
        position += 1  // STRICT, the commas between options
      }
    }
    guard !definition.columns.isEmpty else { throw Failure(reason: "the table has no columns") }
    return definition
  }

  private mutating func parseColumn() throws -> TableDefinition.Column {
    guard let nameToken = current, nameToken.isName else {
      throw Failure(reason: "expected a column name")
    }
    position += 1
    // The type: names (words that begin no constraint, quoted names, strings), then an
    // optional size in parentheses.
    var typeTokens: [SQLToken] = []
    while let token = current,
      (token.kind == .word && !Self.constraintKeywords.contains(currentKeyword ?? ""))
        || token.kind == .quotedName || token.kind == .string
    {
      typeTokens.append(token)
      position += 1
    }
    var typeEnd = typeTokens.last?.range.upperBound ?? 0
    if !typeTokens.isEmpty, isPunctuation("(") {
      try skipParentheses()
      typeEnd = tokens[position - 1].range.upperBound
    }
    let typeStart = typeTokens.first?.range.lowerBound ?? typeEnd
    var column = TableDefinition.Column(
      name: nameToken.text,
      declaredType: String(decoding: sql[typeStart..<typeEnd], as: UTF8.self),
      isIntegerType: typeTokens.count == 1 && typeEnd == typeTokens[0].range.upperBound
        && equalsIgnoringASCIICase(typeTokens[0].text, "INTEGER"))

    // Constraints, up to the `,` or `)` that ends the column.
    var previous: SQLToken?
    while let token = current, !token.isPunctuation(UInt8(ascii: ",")),
      !token.isPunctuation(UInt8(ascii: ")"))
    {
      if token.isPunctuation(UInt8(ascii: "(")) {
        try skipParentheses()
      } else if token.isKeyword("PRIMARY") {
        column.isPrimaryKey = true
        position += 1
        try expectKeyword("KEY")
        if isKeyword("DESC") { column.isPrimaryKeyDescending = true }
      } else if token.isKeyword("DEFAULT"), previous?.isKeyword("SET") != true {
        // `ON DELETE SET DEFAULT` of a foreign key is not a default.
        position += 1
        column.defaultValue = try parseDefault()
      } else if token.isKeyword("AS") {
        position += 1
        if isPunctuation("(") { try skipParentheses() }
        column.generated = isKeyword("STORED") ? .stored : .virtual
      } else {
        position += 1
      }
      previous = token
    }
    return column
  }

  private mutating func parseDefault() throws -> TableDefinition.DefaultExpression {
    guard let token = current else { throw Failure(reason: "DEFAULT without a value") }
    let start = token.range.lowerBound
    if token.isPunctuation(UInt8(ascii: "(")) {
      try skipParentheses()
      return .expression(
        String(decoding: sql[start..<tokens[position - 1].range.upperBound], as: UTF8.self))
    }
    position += 1
    if token.isPunctuation(UInt8(ascii: "-")) || token.isPunctuation(UInt8(ascii: "+")) {
      guard let number = current, number.kind == .number else {
        return .expression(String(decoding: sql[start..<token.range.upperBound], as: UTF8.self))
      }
      position += 1
      return .number(number.text, negative: token.isPunctuation(UInt8(ascii: "-")))
    }
    switch token.kind {
    case .number: return .number(token.text, negative: false)
    case .string, .quotedName: return .string(token.text)
    case .blob: return .blob(hex: token.text)
    case .word:
      if token.isKeyword("NULL") { return .null }
      if token.isKeyword("TRUE") { return .boolean(true) }
      if token.isKeyword("FALSE") { return .boolean(false) }
      if token.isKeyword("CURRENT_TIME") || token.isKeyword("CURRENT_DATE")
        || token.isKeyword("CURRENT_TIMESTAMP")
      {
        return .expression(token.text)
      }
      // SQLite reads a bare name after DEFAULT as a string.
      return .string(token.text)
    case .punctuation:
      return .expression(token.text)
    }
  }

  private mutating func parseTableConstraint(into definition: inout TableDefinition) throws {
    if isKeyword("CONSTRAINT") { position += 2 }
    if isKeyword("PRIMARY") {
      position += 1
      try expectKeyword("KEY")
      guard isPunctuation("(") else { throw Failure(reason: "PRIMARY KEY without its columns") }
      position += 1
      // Each indexed column: a name, then COLLATE, ASC or DESC.
      var expectName = true
      while let token = current, !token.isPunctuation(UInt8(ascii: ")")) {
        if token.isPunctuation(UInt8(ascii: "(")) {
          try skipParentheses()
          continue
        }
        if expectName, token.isName { definition.tablePrimaryKey.append(token.text) }
        expectName = token.isPunctuation(UInt8(ascii: ","))
        position += 1
      }
      position += 1  // the list's `)`
    }
    while let token = current, !token.isPunctuation(UInt8(ascii: ",")),
      !token.isPunctuation(UInt8(ascii: ")"))
    {
      if token.isPunctuation(UInt8(ascii: "(")) { try skipParentheses() } else { position += 1 }
    }
  }
}
