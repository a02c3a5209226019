// The last step of an encoding: the entries' text copied out of the arena as one canonical
// text, objects' members in key order.

extension StoredJSONEncoder.Encoding {
  /// The canonical text of `top`: objects' members in the byte order of their keys, one
  /// member per key; nil if it nests deeper than `JSONEncoder` writes.
  func assemble(_ top: Value) -> [UInt8]? {
    // Every entry's text is copied at most once, every container written at most once (two
    // brackets), with at most one comma per entry: the output fits in this.
    let capacity = arena.count &+ 2 &* containers.count &+ entries.count
    let openCapacity = min(containers.count, StoredJSONEncoder.maximumDepth) &+ 1
    let arena = self.arena.contents
    return entries.withUnsafeBufferPointer { entries in
      containers.withUnsafeBufferPointer { containers in
        withUnsafeTemporaryAllocation(
          of: StoredJSONEncoder.OrderedMember.self, capacity: entries.count
        ) { members in
          withUnsafeTemporaryAllocation(
            of: StoredJSONEncoder.OpenContainer.self, capacity: openCapacity
          ) { open in
            var isTooDeep = false
            let output = [UInt8](unsafeUninitializedCapacity: capacity) { output, count in
              var assembler = StoredJSONEncoder.Assembler(
                arena: arena, entries: entries, containers: containers, members: members,
                open: open, output: output)
              isTooDeep = !assembler.write(top)
              count = assembler.count
            }
            return isTooDeep ? nil : output
          }
        }
      }
    }
  }
}

extension StoredJSONEncoder {
  /// A member of an object as it is written: the key text of entry `key` with the value of
  /// entry `value` (the last entry with an equal key; usually the same entry).
  struct Member {
    var key: Int
    var value: Int
  }

  /// A member with its key's prefix, in ``KeyOrder``'s terms.
  typealias OrderedMember = OrderedKey<Member>

  /// An array or object whose closing bracket has not been written yet.
  struct OpenContainer {
    var isObject: Bool
    var isEmpty = true
    /// For an array, the next entry (-1 at the end); for an object, the position in
    /// `members` of the next member.
    var next: Int
    /// For an object, where its members start and end in `members`.
    var start = 0
    var end = 0
  }

  /// Copies the entries' text into `output` with an explicit stack of open containers, not
  /// by recursion, like JSONWriter. Its buffers are sized by `assemble`; the copies check
  /// against them all the same, so that a broken invariant stops the process rather than
  /// writing out of bounds.
  struct Assembler {
    let arena: UnsafeBufferPointer<UInt8>
    let entries: UnsafeBufferPointer<Entry>
    let containers: UnsafeBufferPointer<Container>
    /// The members of the open objects, innermost last, each object's sorted.
    let members: UnsafeMutableBufferPointer<OrderedMember>
    var memberCount = 0
    let open: UnsafeMutableBufferPointer<OpenContainer>
    var openCount = 0
    let output: UnsafeMutableBufferPointer<UInt8>
    var count = 0

    init(
      arena: UnsafeBufferPointer<UInt8>, entries: UnsafeBufferPointer<Entry>,
      containers: UnsafeBufferPointer<Container>,
      members: UnsafeMutableBufferPointer<OrderedMember>,
      open: UnsafeMutableBufferPointer<OpenContainer>, output: UnsafeMutableBufferPointer<UInt8>
    ) {
      self.arena = arena
      self.entries = entries
      self.containers = containers
      self.members = members
      self.open = open
      self.output = output
    }

    /// Writes `top`; false if it nests too deep.
    mutating func write(_ top: Value) -> Bool {
      switch top.kind {
      case .text:
        copy(top.start, top.end)
        return true
      case .none:
        return true
      case .container:
        guard openContainer(top.start) else { return false }
      }
      while openCount > 0 {
        let innermost = openCount - 1
        let current = open[innermost]
        if current.isObject {
          if current.next < current.end {
            open[innermost].next = current.next + 1
            open[innermost].isEmpty = false
            if !current.isEmpty { byte(JSONByte.comma) }
            let member = members[current.next].payload
            let value = entries[member.value]
            if member.key == member.value {
              copy(value.textStart, value.textEnd)
            } else {
              let key = entries[member.key]
              copy(key.textStart, key.valueStart)
              copy(value.valueStart, value.textEnd)
            }
            if value.container >= 0, !openContainer(value.container) { return false }
            continue
          }
          byte(JSONByte.closeBrace)
          memberCount = current.start
        } else {
          if current.next >= 0 {
            let entry = entries[current.next]
            open[innermost].next = entry.next
            if entry.elementCount > 0 || entry.container >= 0 {
              if !current.isEmpty { byte(JSONByte.comma) }
              open[innermost].isEmpty = false
            }
            copy(entry.textStart, entry.textEnd)
            if entry.container >= 0, !openContainer(entry.container) { return false }
            continue
          }
          byte(JSONByte.closeBracket)
        }
        openCount -= 1
      }
      return true
    }

    /// Writes the opening bracket of `index` and pushes it; false if it is one level too
    /// many.
    private mutating func openContainer(_ index: Int) -> Bool {
      guard openCount < StoredJSONEncoder.maximumDepth else { return false }
      let container = containers[index]
      precondition(openCount < open.count, "StoredJSONEncoder: container stack overflow")
      if container.isObject {
        byte(JSONByte.openBrace)
        let start = memberCount
        collectMembers(of: container)
        open[openCount] = OpenContainer(
          isObject: true, next: start, start: start, end: memberCount)
      } else {
        byte(JSONByte.openBracket)
        open[openCount] = OpenContainer(isObject: false, next: container.first)
      }
      openCount += 1
      return true
    }

    private mutating func copy(_ start: Int, _ end: Int) {
      let length = end - start
      guard length > 0 else { return }
      precondition(
        start >= 0 && end <= arena.count && length <= output.count - count,
        "StoredJSONEncoder: output overflow")
      (output.baseAddress! + count).initialize(from: arena.baseAddress! + start, count: length)
      count += length
    }

    private mutating func byte(_ byte: UInt8) {
      precondition(count < output.count, "StoredJSONEncoder: output overflow")
      output[count] = byte
      count += 1
    }

    // MARK: Members

    /// Appends the members of the object `container` to `members`, sorted by the UTF-8
    /// bytes of their keys, one per key: for a key added more than once, its first spelling
    /// with its last value (what `JSONEncoder`'s `[String: ...]` storage keeps).
    private mutating func collectMembers(of container: Container) {
      let start = memberCount
      var index = container.first
      while index >= 0 {
        precondition(memberCount < members.count, "StoredJSONEncoder: member overflow")
        members[memberCount] = OrderedMember(
          prefix: KeyOrder.prefix(of: keyBytes(of: index)), position: index,
          payload: Member(key: index, value: index))
        memberCount += 1
        index = entries[index].next
      }
      guard memberCount - start > 1 else { return }
      // Keys equal as bytes have the same text: keeping the last keeps its value. Only
      // non-ASCII keys can be equal as Swift strings with other bytes.
      if container.hasNonASCIIKey { mergeEquivalentKeys(from: start) }
      let kept = KeyOrder.sortKeepingLast(
        UnsafeMutableBufferPointer(rebasing: members[start..<memberCount])
      ) { a, b in bytesOrder(keyBytes(of: a.key), keyBytes(of: b.key)) }
      memberCount = start + kept
    }

    /// Makes keys that are equal as Swift strings (canonically equivalent, whatever their
    /// bytes) one member, in `members[start...]`, which are in the order they were added.
    /// Only non-ASCII text can be equivalent to other text, but it can be to ASCII text
    /// ("\u{212A}", the Kelvin sign, is "K").
    private mutating func mergeEquivalentKeys(from start: Int) {
      var positions: [String: Int] = [:]
      var kept = start
      for position in start..<memberCount {
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
      memberCount = kept
    }

    /// The raw key of entry `index`, in the arena.
    private func keyBytes(of index: Int) -> UnsafeRawBufferPointer {
      let entry = entries[index]
      return UnsafeRawBufferPointer(
        UnsafeBufferPointer(rebasing: arena[entry.keyStart..<entry.keyEnd]))
    }
  }
}
