// The slots the values being encoded go to, and their coding paths.

extension StoredJSONEncoder.Encoding {
  typealias Slot = StoredJSONEncoder.Slot
  typealias SlotReference = StoredJSONEncoder.SlotReference
  typealias PathNode = StoredJSONEncoder.PathNode
  typealias Misuse = StoredJSONEncoder.Misuse

  func slot(_ reference: SlotReference) -> Slot? {
    if reference.index < 0 { return detached[-1 - reference.index] }
    guard reference.index < slots.count, slots[reference.index].serial == reference.serial
    else { return nil }
    return slots[reference.index]
  }

  func setSlot(_ reference: SlotReference, _ slot: Slot) {
    if reference.index < 0 {
      detached[-1 - reference.index] = slot
    } else {
      slots[reference.index] = slot
    }
  }

  /// The keyed container of the encoder whose value goes to `reference`, made on the first
  /// request; `JSONEncoder`'s rules for what may already be there.
  func keyedContainer(in reference: SlotReference) -> Int {
    guard var slot = slot(reference) else {
      return misused("an Encoder was used after the value it encodes was finished", at: -1)
    }
    if slot.object >= 0 { return slot.object }
    if slot.array < 0, slot.single.kind == .none {
      slot.object = newContainer(isObject: true, pathNode: slot.pathNode)
    } else if slot.array < 0, isObject(slot.single) {
      // A value encoded as an object through the single-value container: go on with it.
      slot.object = slot.single.start
      slot.single = .none
      containers[slot.object].pathNode = slot.pathNode
    } else {
      return misused(
        "a keyed container was requested where a value was already encoded",
        at: slot.pathNode)
    }
    setSlot(reference, slot)
    return slot.object
  }

  /// The unkeyed container of the encoder whose value goes to `reference`.
  func unkeyedContainer(in reference: SlotReference) -> Int {
    guard var slot = slot(reference) else {
      return misused("an Encoder was used after the value it encodes was finished", at: -1)
    }
    if slot.array >= 0 { return slot.array }
    if slot.object < 0, slot.single.kind == .none {
      slot.array = newContainer(isObject: false, pathNode: slot.pathNode)
    } else if slot.object < 0, isArray(slot.single) {
      slot.array = slot.single.start
      slot.single = .none
      containers[slot.array].pathNode = slot.pathNode
    } else {
      return misused(
        "an unkeyed container was requested where a value was already encoded",
        at: slot.pathNode, isObject: false)
    }
    setSlot(reference, slot)
    return slot.array
  }

  /// Records what a single-value container encoded.
  func setSingle(_ value: Value, in reference: SlotReference) {
    guard var slot = slot(reference) else {
      _ = misused("an Encoder was used after the value it encodes was finished", at: -1)
      return
    }
    guard slot.single.kind == .none else {
      _ = misused(
        "a single-value container was asked to encode a second value", at: slot.pathNode)
      return
    }
    slot.single = value
    setSlot(reference, slot)
  }

  func pathNode(of reference: SlotReference) -> Int {
    slot(reference)?.pathNode ?? -1
  }

  func isObject(_ value: Value) -> Bool {
    value.kind == .container && containers[value.start].isObject
  }

  func isArray(_ value: Value) -> Bool {
    value.kind == .container && !containers[value.start].isObject
  }

  /// Notes a misuse (the first one is thrown when the encoding ends) and returns a
  /// container that nothing refers to, for the caller to write into harmlessly.
  func misused(_ message: String, at pathNode: Int, isObject: Bool = true) -> Int {
    if misuse == nil {
      misuse = Misuse(message: message, codingPath: codingPath(at: pathNode))
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
    path.append(PathNode(parent: parent, key: key, index: -1))
    return path.count - 1
  }
}
