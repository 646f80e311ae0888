package reload

// SetWatching lets tests wait until Run watches the files: f is called
// once it does.
func SetWatching(r *Reloader, f func()) { r.watching = f }
