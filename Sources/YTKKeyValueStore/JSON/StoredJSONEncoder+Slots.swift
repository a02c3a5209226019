// The slots the values being encoded go to, and their coding paths.

extension StoredJSONEncoder.Encoding {
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

  /// The keyed (`isObject`) or unkeyed container of the encoder whose value goes to
  /// `reference`, made on the first request; `JSONEncoder`'s rules for what may already be
  /// there.
  func container(isObject: Bool, in reference: SlotReference) -> Int {
    guard var slot = slot(reference) else {
      return misused("an Encoder was used after the value it encodes was finished", at: -1)
    }
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
    setSlot(reference, slot)
    return container
  }

  /// Records what a single-value container encoded.
  func setSingle(_ value: Value, in reference: SlotReference) {
    guard var slot = slot(reference) else {
      _ = misused("an Encoder was used after the value it encodes was finished", at: -1)
      return
    }
    guard case .nothing = slot.single else {
      _ = misused(
        "a single-value container was asked to encode a second value", at: slot.pathNode)
      return
    }
    slot.single = value
    setSlot(reference, slot)
  }

  func newDetachedSlot(pathNode: Int) -> SlotReference {
    detached.append(Slot(pathNode: pathNode, serial: 0))
    return SlotReference(index: -detached.count, serial: 0)
  }

  func pathNode(of reference: SlotReference) -> Int {
    slot(reference)?.pathNode ?? -1
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
