// The last step of an encoding: the entries' text copied out of the arena as one canonical
// text, objects' members in key order.

extension StoredJSONEncoder.Encoding {
  /// The canonical text of `top`: objects' members in the byte order of their keys, one
  /// member per key; nil if it nests deeper than `JSONEncoder` writes.
  func assemble(_ top: Value) -> [UInt8]? {
    entries.withUnsafeBufferPointer { entries in
      containers.withUnsafeBufferPointer { containers in
        ScratchStack<StoredJSONEncoder.OrderedMember>.withScratch { members in
          // Every entry's text is copied at most once, every container written at most once
          // (two brackets), with at most one comma per entry.
          var assembler = StoredJSONEncoder.Assembler(
            arena: arena.contents, entries: entries, containers: containers, members: members,
            output: JSONOutput(capacity: arena.count + 2 * containers.count + entries.count))
          // The stack is the one given, moved on the heap if it grew: that releases it.
          defer {
            members = assembler.members
            assembler.output.release()
          }
          return assembler.write(top) ? assembler.output.bytes() : nil
        }
      }
    }
  }
}

extension StoredJSONEncoder {
  /// A member of an object as it is written: the key text of entry `key` with the value of
  /// entry `value` (the last entry with an equal key; usually the same entry). For an
  /// element of an array, both are the element's entry.
  struct Member {
    var key: Int
    var value: Int
  }

  /// A member with its key's prefix, in ``KeyOrder``'s terms.
  typealias OrderedMember = OrderedKey<Member>

  /// Copies the entries' text into `output`, containers' in their order, objects' members
  /// sorted.
  struct Assembler {
    let arena: UnsafeBufferPointer<UInt8>
    let entries: UnsafeBufferPointer<Entry>
    let containers: UnsafeBufferPointer<Container>
    /// The members and elements of the containers being written, innermost last.
    var members: ScratchStack<OrderedMember>
    var output: JSONOutput

    /// Writes `top`; false if it nests too deep.
    mutating func write(_ top: Value) -> Bool {
      switch top {
      case .text(let start, let end):
        copy(start, end)
        return true
      case .nothing:
        return true
      case .container(let index):
        return write(container: index, depth: 1)
      }
    }

    /// Writes the array or object `index`, at nesting level `depth`, and what it holds;
    /// false if that nests too deep. (The recursion goes no deeper than the `encode(to:)`
    /// calls that made the containers.)
    private mutating func write(container index: Int, depth: Int) -> Bool {
      guard depth <= StoredJSONEncoder.maximumDepth else { return false }
      let container = containers[index]
      output.append(container.isObject ? JSONByte.openBrace : JSONByte.openBracket)
      let start = members.count
      var entry = container.first
      while entry >= 0 {
        let prefix = container.isObject ? KeyOrder.prefix(of: keyBytes(of: entry)) : 0
        members.append(
          OrderedMember(prefix: prefix, position: entry, payload: Member(key: entry, value: entry)))
        entry = entries[entry].next
      }
      if container.isObject {
        sortMembers(from: start, mergingEquivalentKeys: container.hasNonASCIIKey)
      }
      for position in start..<members.count {
        if position > start { output.append(JSONByte.comma) }
        let member = members[position].payload
        let value = entries[member.value]
        if member.key == member.value {
          copy(value.textStart, value.textEnd)
        } else {
          let key = entries[member.key]
          copy(key.textStart, key.valueStart)
          copy(value.valueStart, value.textEnd)
        }
        if value.container >= 0, !write(container: value.container, depth: depth + 1) {
          return false
        }
      }
      members.forgetElements(from: start)
      output.append(container.isObject ? JSONByte.closeBrace : JSONByte.closeBracket)
      return true
    }

    private mutating func copy(_ start: Int, _ end: Int) {
      output.append(contentsOf: UnsafeBufferPointer(rebasing: arena[start..<end]))
    }

    // MARK: Members

    /// Sorts the members of an object, `members[start...]`, by the UTF-8 bytes of their
    /// keys, one per key: for a key added more than once, its first spelling with its last
    /// value (what `JSONEncoder`'s `[String: ...]` storage keeps).
    private mutating func sortMembers(from start: Int, mergingEquivalentKeys: Bool) {
      // Keys equal as bytes have the same text: keeping the last keeps its value. Only
      // non-ASCII keys can be equal as Swift strings with other bytes.
      if mergingEquivalentKeys { mergeEquivalentKeys(from: start) }
      let kept = members.withElements(from: start) { run in
        KeyOrder.sortKeepingLast(run) { a, b in
          bytesOrder(keyBytes(of: a.key), keyBytes(of: b.key))
        }
      }
      members.forgetElements(from: start + kept)
    }

    /// Makes keys that are equal as Swift strings (canonically equivalent, whatever their
    /// bytes) one member, in `members[start...]`, which are in the order they were added.
    /// Only non-ASCII text can be equivalent to other text, but it can be to ASCII text
    /// ("\u{212A}", the Kelvin sign, is "K").
    private mutating func mergeEquivalentKeys(from start: Int) {
      var positions: [String: Int] = [:]
      var kept = start
      for position in start..<members.count {
        let member = members[position]
        let key = String(decoding: keyBytes(of: member.payload.key), as: UTF8.self)
        if let first = positions[key] {
          members[first].payload.value = member.payload.value
        } else {
          positions[key] = kept
          members[kept] = member
          kept += 1
        }
      }
      members.forgetElements(from: kept)
    }

    /// The raw key of entry `index`, in the arena.
    private func keyBytes(of index: Int) -> UnsafeRawBufferPointer {
      let entry = entries[index]
      return UnsafeRawBufferPointer(
        UnsafeBufferPointer(rebasing: arena[entry.keyStart..<entry.keyEnd]))
    }
  }
}
