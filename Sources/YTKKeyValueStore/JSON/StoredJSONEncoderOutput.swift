// The last step of an encoding: the containers' entries, in key order for objects, copied
// out of the arena as one canonical text.

extension StoredJSONEncoder {
  /// The deepest nesting `JSONEncoder` writes: it refuses an array or object at level 512,
  /// one level short of what the reader accepts.
  static let maximumContainerDepth = JSONReader.maximumDepth - 1

  /// A member of an object as it is written: the key of entry `key` with the value of entry
  /// `value` (the last entry with an equal key).
  struct Member {
    var key: Int
    var value: Int
  }

  /// An array or object whose closing bracket has not been written yet.
  private struct OpenContainer {
    var isObject: Bool
    /// For an array, the next entry (-1 at the end); for an object, the position in
    /// `members` of the next member.
    var next: Int
    /// For an object, where its members start and end in `members`.
    var start: Int
    var end: Int
  }

  struct TooDeep: Error {
    var message: String
  }
}

extension StoredJSONEncoder.Encoding {
  /// The canonical text of `top`: objects' members in the byte order of their keys, one
  /// member per key, and nothing deeper than `JSONEncoder` and the reader allow.
  ///
  /// Written with an explicit stack rather than by recursion, like JSONWriter.
  func assemble(_ top: Value) throws(StoredJSONEncoder.TooDeep) -> [UInt8] {
    var output: [UInt8] = []
    output.reserveCapacity(arena.count &+ 2 &* entries.count &+ 8)
    let entries = self.entries
    let containers = self.containers
    let result = arena.withUnsafeBufferPointer { arena in
      Result { () throws(StoredJSONEncoder.TooDeep) in
        try assemble(top, arena: arena, entries: entries, containers: containers, into: &output)
      }
    }
    try result.get()
    return output
  }

  private func assemble(
    _ top: Value, arena: UnsafeBufferPointer<UInt8>, entries: [StoredJSONEncoder.Entry],
    containers: [StoredJSONEncoder.Container], into output: inout [UInt8]
  ) throws(StoredJSONEncoder.TooDeep) {
    var open: [StoredJSONEncoder.OpenContainer] = []
    var members: [StoredJSONEncoder.Member] = []
    var current = top

    func appendKey(of entry: Int) {
      output.append(JSONByte.quote)
      let keyEntry = entries[entry]
      JSONWriter.appendEscaped(
        UnsafeBufferPointer(rebasing: arena[keyEntry.keyStart..<keyEntry.keyEnd]), into: &output)
      output.append(JSONByte.quote)
      output.append(JSONByte.colon)
    }

    nextValue: while true {
      switch current.kind {
      case .text:
        output.append(contentsOf: UnsafeBufferPointer(rebasing: arena[current.start..<current.end]))
      case .none:
        // Not reached: empty values are made `{}` where they are encoded.
        JSONWriter.appendLiteral("{}", into: &output)
      case .container:
        guard open.count < StoredJSONEncoder.maximumContainerDepth else { throw tooDeep() }
        let container = containers[current.start]
        if container.isObject {
          output.append(JSONByte.openBrace)
          let start = members.count
          collectMembers(of: container, arena: arena, entries: entries, into: &members)
          if members.count > start {
            open.append(
              StoredJSONEncoder.OpenContainer(
                isObject: true, next: start + 1, start: start, end: members.count))
            appendKey(of: members[start].key)
            current = entries[members[start].value].value
            continue nextValue
          }
          output.append(JSONByte.closeBrace)
        } else {
          output.append(JSONByte.openBracket)
          if container.first >= 0 {
            let first = entries[container.first]
            open.append(
              StoredJSONEncoder.OpenContainer(isObject: false, next: first.next, start: 0, end: 0))
            current = first.value
            continue nextValue
          }
          output.append(JSONByte.closeBracket)
        }
      }

      // `current` is written: go on with the next entry of the innermost open container.
      while let innermost = open.last {
        let top = open.count - 1
        if innermost.isObject {
          if innermost.next < innermost.end {
            open[top].next += 1
            output.append(JSONByte.comma)
            let member = members[innermost.next]
            appendKey(of: member.key)
            current = entries[member.value].value
            continue nextValue
          }
          output.append(JSONByte.closeBrace)
          members.removeLast(members.count - innermost.start)
        } else {
          if innermost.next >= 0 {
            let entry = entries[innermost.next]
            open[top].next = entry.next
            output.append(JSONByte.comma)
            current = entry.value
            continue nextValue
          }
          output.append(JSONByte.closeBracket)
        }
        open.removeLast()
      }
      return
    }
  }

  private func tooDeep() -> StoredJSONEncoder.TooDeep {
    StoredJSONEncoder.TooDeep(
      message:
        "JSON arrays and objects cannot nest deeper than "
        + "\(StoredJSONEncoder.maximumContainerDepth) levels")
  }

  /// Appends the members of the object `container` to `members`, sorted by the UTF-8 bytes
  /// of their keys, one per key: for a key added more than once, its first spelling with
  /// its last value (what `JSONEncoder`'s `[String: ...]` storage keeps).
  private func collectMembers(
    of container: StoredJSONEncoder.Container, arena: UnsafeBufferPointer<UInt8>,
    entries: [StoredJSONEncoder.Entry], into members: inout [StoredJSONEncoder.Member]
  ) {
    let start = members.count
    if container.hasNonASCIIKey {
      // Keys equal as Swift strings (canonically equivalent) are one key, whatever their
      // bytes; only non-ASCII text can be equivalent to other text.
      var positions: [String: Int] = [:]
      var index = container.first
      while index >= 0 {
        let entry = entries[index]
        let key = String(
          decoding: UnsafeBufferPointer(rebasing: arena[entry.keyStart..<entry.keyEnd]),
          as: UTF8.self)
        if let position = positions[key] {
          members[position].value = index
        } else {
          positions[key] = members.count
          members.append(StoredJSONEncoder.Member(key: index, value: index))
        }
        index = entry.next
      }
      sortMembers(&members, from: start, arena: arena, entries: entries)
      return
    }

    var index = container.first
    while index >= 0 {
      members.append(StoredJSONEncoder.Member(key: index, value: index))
      index = entries[index].next
    }
    sortMembers(&members, from: start, arena: arena, entries: entries)
    // Equal keys are now adjacent, in the order they were added: keep the last value.
    var kept = start
    var position = start
    while position < members.count {
      let member = members[position]
      if kept > start, equalKeys(members[kept - 1].key, member.key, arena, entries) {
        members[kept - 1].value = member.value
      } else {
        members[kept] = member
        kept += 1
      }
      position += 1
    }
    members.removeLast(members.count - kept)
  }

  /// Sorts `members[start...]` by the bytes of their keys; members with equal keys stay in
  /// the order they were added (their entry numbers increase).
  private func sortMembers(
    _ members: inout [StoredJSONEncoder.Member], from start: Int,
    arena: UnsafeBufferPointer<UInt8>, entries: [StoredJSONEncoder.Entry]
  ) {
    guard members.count - start > 1 else { return }
    members.withUnsafeMutableBufferPointer { all in
      var run = UnsafeMutableBufferPointer(rebasing: all[start...])
      run.sort { lhs, rhs in
        switch compareKeys(lhs.key, rhs.key, arena, entries) {
        case .less: return true
        case .greater: return false
        case .equal: return lhs.key < rhs.key
        }
      }
    }
  }

  private enum Order {
    case less, equal, greater
  }

  private func compareKeys(
    _ lhs: Int, _ rhs: Int, _ arena: UnsafeBufferPointer<UInt8>,
    _ entries: [StoredJSONEncoder.Entry]
  ) -> Order {
    let left = entries[lhs]
    let right = entries[rhs]
    let leftCount = left.keyEnd - left.keyStart
    let rightCount = right.keyEnd - right.keyStart
    let common = min(leftCount, rightCount)
    var offset = 0
    while offset < common {
      let leftByte = arena[left.keyStart + offset]
      let rightByte = arena[right.keyStart + offset]
      if leftByte != rightByte { return leftByte < rightByte ? .less : .greater }
      offset += 1
    }
    if leftCount == rightCount { return .equal }
    return leftCount < rightCount ? .less : .greater
  }

  private func equalKeys(
    _ lhs: Int, _ rhs: Int, _ arena: UnsafeBufferPointer<UInt8>,
    _ entries: [StoredJSONEncoder.Entry]
  ) -> Bool {
    compareKeys(lhs, rhs, arena, entries) == .equal
  }
}
