"""The serverless broker of the embedded run: kombu's filesystem transport, with messages that
appear in the queue folder only once they are whole.

kombu's own `_put` creates the message file under its final name and then writes into it, and
its `_get` takes any file with a matching name (a move, which no `flock` holds back). A worker
that lists the folder between the two takes an empty file, fails to decode it and stops with
"Unrecoverable error: JSONDecodeError" (celery/kombu#1551, still open): the embedded portal's
worker dies and a task is lost. Here a message is written under a name `_get` does not match
and renamed into place, and a rename within one folder is atomic, so a reader sees either no
file or the whole message. Everything else (reading, fanout, purging) is kombu's.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

# `_get` matches what follows a name's first dot against "<queue>.msg" exactly: a file that
# ends in this suffix is never taken while it is being written.
PARTIAL_SUFFIX = ".partial"


class Channel(filesystem.Channel):
    # Named as kombu's filesystem Channel names them; its own base calls the payload `message`.
    def _put(self, queue: str, payload: dict, **kwargs: object) -> None:  # type: ignore[override]
        # The name's shape (milliseconds first, so a sorted listing is oldest first) is kombu's.
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + PARTIAL_SUFFIX
        try:
            with open(partial, "wb", buffering=0) as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            try:
                os.unlink(partial)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
