// The uploaded files a rendered message links to (Zulip's potential_attachment_path_ids): every
// `<a href>` of the rendered content that points at `/user_uploads/<path_id>`, relative or on the
// organization's own host (links to other servers name other files).
const HREF = /<a href="([^"]*)"/g;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#x27': "'" };
const unescapeHtml = (text: string) => text.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (_, name: string) => ENTITIES[name]!);

const PREFIX = '/user_uploads/';

/** The path ids (unique, in order of appearance) of the uploads `renderedHtml` links to. */
export function uploadPathIdsOf(renderedHtml: string, realmUrl: string): string[] {
  if (!renderedHtml.includes('user_uploads/')) return [];
  const realmHost = new URL(realmUrl).host;
  const found = new Set<string>();
  for (const m of renderedHtml.matchAll(HREF)) {
    const href = unescapeHtml(m[1]!);
    let path: string;
    if (href.startsWith(PREFIX)) {
      path = href;
    } else {
      let url: URL;
      try {
        url = new URL(href);
      } catch {
        continue;
      }
      if (url.host !== realmHost || !url.pathname.startsWith(PREFIX)) continue;
      path = url.pathname;
    }
    path = path.replace(/[?#].*$/s, '');
    let pathId = path.slice(PREFIX.length);
    try {
      pathId = decodeURIComponent(pathId);
    } catch {
      // kept as written
    }
    if (pathId !== '' && !pathId.startsWith('temporary/') && !pathId.startsWith('download/')) found.add(pathId);
  }
  return [...found];
}
