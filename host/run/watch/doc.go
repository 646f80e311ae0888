// Package watch tells a long-running wasmsched process (serve,
// simulate --watch) that one of the files it loaded may have changed, so it
// can reload its configuration and modules.
//
// # Why directories, not files
//
// Watching a file directly follows one inode. That breaks for most of the ways
// files are actually replaced:
//
//   - A Kubernetes ConfigMap or Secret volume never writes the file a
//     container reads. The mount holds config.yaml -> ..data/config.yaml and
//     ..data -> ..<timestamp>/. The kubelet writes a whole new timestamped
//     directory, points a fresh symlink ..data_tmp at it and renames that over
//     ..data in one step, then deletes the old directory. The file we opened
//     sees no write at all; the only event is a rename in the mount directory.
//   - Editors and `cp new tmp && mv tmp old` replace the inode, so a watch on
//     the old inode reports a removal and then goes silent.
//   - A file deleted and created again, or one that does not exist yet when
//     the process starts, has no inode to watch.
//
// So the Watcher resolves each path one component at a time and watches the
// directory that holds every symlink it passes through, plus the directory
// holding the final file. A rename, create or delete of any link in the chain
// then shows up as an event in a directory we watch. After events it resolves
// again and moves its watches to the directories the chain now runs through
// (the new timestamped directory, in the ConfigMap case).
//
// # Why fingerprints
//
// A watched directory reports every file in it, not just ours, and a single
// swap produces several events. Events therefore only mean "look again". For
// each path the Watcher keeps a fingerprint: the resolved real path, device
// and inode, size and modification time. It signals on Changes only when a
// fingerprint differs from the one it last saw, so another file being written
// next to ours stays quiet, while a ConfigMap swap (new real path and inode)
// or an in-place write (new size or mtime) is reported.
//
// # Debounce
//
// Changes rarely come alone: a swap is several renames, an editor save is a
// write plus a rename. The Watcher waits until events have been quiet for the
// debounce interval, then compares fingerprints once, so a burst yields one
// signal. A stream that never goes quiet is still checked at most four
// debounce intervals after its first event. Changes is buffered with room for
// one signal; signals that the reader has not consumed yet merge into one.
//
// # Limits
//
// On Linux each Watcher uses one inotify instance (fs.inotify.max_user_instances,
// often 128 per user) and one watch per directory it watches
// (fs.inotify.max_user_watches). A change that keeps a file's size and
// modification time and inode (possible on file systems with coarse
// timestamps) is not seen. Renaming a plain, non-symlink directory above the
// watched file is not followed.
package watch
