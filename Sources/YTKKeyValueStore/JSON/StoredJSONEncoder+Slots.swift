// The slots the values being encoded go to, and their coding paths.

extension StoredJSONEncoder.Encoding {
  /// Calls `body` with the slot `reference` names, to read or change it in place; nil if
  /// the slot's value is finished.
  func withSlot<R>(_ reference: SlotReference, _ body: (inout Slot) -> R) -> R? {
    if reference.index < 0 { return body(&detached[-1 - reference.index]) }
    guard reference.index < slots.count, slots[reference.index].serial == reference.serial
    else { return nil }
    return body(&slots[reference.index])
  }

  /// The keyed (`isObject`) or unkeyed container of the encoder whose value goes to
  /// `reference`, made on the first request; `JSONEncoder`'s rules for what may already be
  /// there.
  func container(isObject: Bool, in reference: SlotReference) -> Int {
    let container = withSlot(reference) { slot -> Int in
      let (mine, other) = isObject ? (slot.object, slot.array) : (slot.array, slot.object)
      if mine >= 0 { return mine }
      let container: Int
      if other < 0, case .nothing = slot.single {
        container = newContainer(isObject: isObject, pathNode: slot.pathNode)
      } else if other < 0, case .container(let single) = slot.single,
        containers[single].isObject == isObject
      {
        // A value of this kind encoded through the single-value container: go on with it.
        container = single
        slot.single = .nothing
        containers[container].pathNode = slot.pathNode
      } else {
        return misused(
          "\(isObject ? "a keyed" : "an unkeyed") container was requested where a value was "
            + "already encoded", at: slot.pathNode, isObject: isObject)
      }
      if isObject { slot.object = container } else { slot.array = container }
      return container
    }
    return container ?? misused(Self.finished, at: -1)
  }

  /// Records what a single-value container encoded.
  func setSingle(_ value: Value, in reference: SlotReference) {
    let found: Void? = withSlot(reference) { slot in
      if case .nothing = slot.single {
        slot.single = value
      } else {
        _ = misused(
          "a single-value container was asked to encode a second value", at: slot.pathNode)
      }
    }
    if found == nil { _ = misused(Self.finished, at: -1) }
  }

  /// The misuse of an encoder or container kept past the end of its value.
  static let finished = "an Encoder was used after the value it encodes was finished"

  func newDetachedSlot(pathNode: Int) -> SlotReference {
    detached.append(Slot(pathNode: pathNode, serial: 0))
    return SlotReference(index: -detached.count, serial: 0)
  }

  func pathNode(of reference: SlotReference) -> Int {
    withSlot(reference) { $0.pathNode } ?? -1
  }

  /// Notes a misuse (the first one is thrown when the encoding ends) and returns a
  /// container that nothing refers to, for the caller to write into harmlessly.
  func misused(_ message: String, at pathNode: Int, isObject: Bool = true) -> Int {
    if misuse == nil {
      misuse = StoredJSONEncoder.Misuse(message: message, codingPath: codingPath(at: pathNode))
    }
    return newContainer(isObject: isObject, pathNode: pathNode)
  }

  // MARK: Coding paths

  /// The coding path that ends at `node`.
  func codingPath(at node: Int) -> [any CodingKey] {
    var keys: [any CodingKey] = []
    var node = node
    // A container kept past its value's end may name a node that is gone; stop there.
    while node >= 0, node < path.count {
      let step = path[node]
      keys.append(step.key ?? IndexKey(step.index))
      node = step.parent
    }
    return keys.reversed()
  }

  /// Adds a path step for a nested container or super encoder; it lasts as long as the
  /// value being encoded.
  func pushPath(parent: Int, key: some CodingKey) -> Int {
    path.append(StoredJSONEncoder.PathNode(parent: parent, key: key, index: -1))
    return path.count - 1
  }
}
