"""Unit tests of opqueue.keys (key files, as Sources/ZeroMQ/KeyFile.swift loads them, and handshake
refusals), without a coordinator: a pyzmq CURVE server with a ZAP authenticator stands in for it.

    pytest python/tests/test_keys.py      (in the venv scripts/setup makes; scripts/test runs it)
"""
import os
import tempfile
import time
import unittest

import zmq
from zmq.auth.thread import ThreadAuthenticator

import opqueue.keys as k


def write(path, text, mode):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


class KeyFiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.public, self.secret = zmq.curve_keypair()
        self.key = write(self.path("me.key"), "# opqueue CURVE secret key\n\n%s\n" % self.secret.decode(), 0o600)
        self.pub = write(self.path("me.key.pub"), self.public.decode() + "\n", 0o644)

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def refused(self, fn, *args, **kw):
        with self.assertRaises(k.KeyFileError) as cm:
            fn(*args, **kw)
        return str(cm.exception)

    def test_secret_after_comments_gives_the_pair(self):
        self.assertEqual(k.load_secret(self.key), (self.secret, self.public))

    def test_missing_secret_says_how_to_make_one(self):
        why = self.refused(k.load_secret, self.path("nope.key"))
        self.assertIn("does not exist", why)
        self.assertIn("opctl keys new %s" % self.path("nope.key"), why)

    def test_secret_readable_by_others_is_refused_with_chmod_advice(self):
        for mode in (0o644, 0o640, 0o604, 0o660):
            os.chmod(self.key, mode)
            why = self.refused(k.load_secret, self.key)
            self.assertIn("permissions %o" % mode, why)
            self.assertIn("too open", why)
            self.assertIn("chmod 600 '%s'" % self.key, why)
        os.chmod(self.key, 0o400)
        self.assertEqual(k.load_secret(self.key)[0], self.secret)

    def test_malformed_secret_files(self):
        for text in ("", "# only a comment\n\n", "short\n", "%s\n" % ("#" * 40), "%sxyz\n" % self.secret.decode()):
            write(self.key, text, 0o600)
            why = self.refused(k.load_secret, self.key)
            self.assertIn("does not hold a CURVE key", why)
            self.assertIn("opctl keys new PATH", why)
        why = self.refused(k.load_secret, self.dir.name)
        self.assertIn("not a regular file", why)

    def test_public_key_as_text_or_file(self):
        self.assertEqual(k.load_public(self.public.decode()), self.public)
        self.assertEqual(k.load_public("  %s\n" % self.public.decode()), self.public)
        self.assertEqual(k.load_public(self.pub), self.public)
        self.assertIn("neither a public key", self.refused(k.load_public, self.path("nope.pub")))
        write(self.pub, "# nothing\n", 0o644)
        self.assertIn("no key in it", self.refused(k.load_public, self.pub))

    def test_one_without_the_other_is_a_mistake(self):
        self.assertIsNone(k.resolve(None, None, environ={}))
        self.assertIn("without the coordinator's public key", self.refused(k.resolve, self.key, None, environ={}))
        self.assertIn("without a key of your own", self.refused(k.resolve, None, self.pub, environ={}))

    def test_environment_and_flags(self):
        keys = k.resolve(None, None, environ={"OPQ_KEY": self.key, "OPQ_COORDINATOR_KEY": self.pub})
        self.assertEqual((keys.secret, keys.public, keys.server), (self.secret, self.public, self.public))
        # A flag wins over its variable; an empty variable counts as not given.
        self.assertIn("does not exist", self.refused(
            k.resolve, self.path("other.key"), None, environ={"OPQ_KEY": self.key, "OPQ_COORDINATOR_KEY": self.pub}))
        self.assertIsNone(k.resolve(None, None, environ={"OPQ_KEY": "", "OPQ_COORDINATOR_KEY": ""}))


class Handshakes(unittest.TestCase):
    """A refused key is said at once ("authentication failed"), not after a timeout."""

    def setUp(self):
        self.ctx = zmq.Context()
        self.server_public, server_secret = zmq.curve_keypair()
        self.allowed_public, self.allowed_secret = zmq.curve_keypair()
        self.auth = ThreadAuthenticator(self.ctx)
        self.auth.start()
        allowed = self.allowed_public

        class Only:  # allows one key (Z85), like an allow file of one line
            def callback(self, domain, key):
                return key == allowed
        self.auth.configure_curve_callback(domain="opqueue", credentials_provider=Only())
        self.server = self.ctx.socket(zmq.ROUTER)
        self.server.curve_server = True
        self.server.curve_secretkey = server_secret
        self.server.curve_publickey = self.server_public
        self.server.zap_domain = b"opqueue"
        port = self.server.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port
        self.plain = self.ctx.socket(zmq.ROUTER)
        self.plain_endpoint = "tcp://127.0.0.1:%d" % self.plain.bind_to_random_port("tcp://127.0.0.1")

    def tearDown(self):
        self.auth.stop()
        self.server.close(linger=0)
        self.plain.close(linger=0)
        self.ctx.term()

    def outcome(self, keys, endpoint, within=5.0):
        """(refusal or None, seconds, whether a request got through)."""
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        watch = k.prepare(sock, keys)
        sock.connect(endpoint)
        sock.send(b"ping")
        start, why, through = time.monotonic(), None, False
        receiver = self.server if endpoint == self.endpoint else self.plain
        while time.monotonic() - start < within and why is None and not through:
            zmq.select([watch.socket, receiver], [], [], 0.1)
            why = watch.refusal()
            through = receiver.poll(0) != 0
        elapsed = time.monotonic() - start
        watch.close()
        sock.close(linger=0)
        return why, elapsed, through

    def keys(self, public, secret, server=None):
        return k.Keys(secret, public, server or self.server_public)

    def test_allowed_key_gets_through(self):
        why, _, through = self.outcome(self.keys(self.allowed_public, self.allowed_secret), self.endpoint)
        self.assertIsNone(why)
        self.assertTrue(through)

    def test_key_not_allowed_is_said_at_once(self):
        why, elapsed, through = self.outcome(self.keys(*zmq.curve_keypair()), self.endpoint)
        self.assertFalse(through)
        self.assertIsNotNone(why)
        self.assertTrue(why.startswith("authentication failed: the coordinator does not allow this client's key"), why)
        self.assertLess(elapsed, 2.0)

    def test_no_key_against_curve_says_keys_are_required(self):
        why, elapsed, _ = self.outcome(None, self.endpoint)
        self.assertIn("authentication failed: the coordinator requires keys", why or "")
        self.assertLess(elapsed, 2.0)

    def test_key_against_no_curve_says_leave_them_out(self):
        why, elapsed, _ = self.outcome(self.keys(self.allowed_public, self.allowed_secret), self.plain_endpoint)
        self.assertIn("authentication failed: the coordinator does not use keys", why or "")
        self.assertLess(elapsed, 2.0)

    def test_wrong_coordinator_key_is_said_after_a_few_closed_handshakes(self):
        wrong, _ = zmq.curve_keypair()
        why, elapsed, through = self.outcome(self.keys(self.allowed_public, self.allowed_secret, wrong), self.endpoint)
        self.assertFalse(through)
        self.assertIn("--coordinator-key is probably not its public key", why or "")
        self.assertLess(elapsed, 4.0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
