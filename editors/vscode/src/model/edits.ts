// Which documents a workspace/applyEdit touched, so the glue can save them before it
// answers (the server then finds the disk equal to the buffer).

export interface WorkspaceEditLike {
  changes?: { [uri: string]: unknown };
  documentChanges?: Array<
    | { textDocument: { uri: string }; edits: unknown[] }
    | { kind: 'create' | 'delete'; uri: string }
    | { kind: 'rename'; oldUri: string; newUri: string }
  >;
}

/** URIs whose documents were edited (created or deleted ones are not text edits). */
export function editedUris(edit: WorkspaceEditLike): string[] {
  const uris = new Set<string>();
  for (const uri of Object.keys(edit.changes ?? {})) uris.add(uri);
  for (const change of edit.documentChanges ?? []) {
    if ('textDocument' in change) uris.add(change.textDocument.uri);
    else if (change.kind === 'rename') uris.add(change.newUri);
  }
  return [...uris];
}
