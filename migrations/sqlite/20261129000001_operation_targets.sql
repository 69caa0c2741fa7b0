-- Operation targets become JSON with a version tag ({"v":1,"nodes":3}); rows of the old plain
-- form are rewritten. A target that does not fit its kind is left as it was: it reads as
-- unreadable, and the operation fails saying so instead of running with a default.
UPDATE operations SET target = json_object('v', 1, 'nodes', CAST(target AS INTEGER))
 WHERE kind = 'scale' AND target <> '' AND target NOT GLOB '*[^0-9]*' AND length(target) <= 9;
UPDATE operations SET target = json_object('v', 1, 'version', target)
 WHERE kind = 'upgrade' AND target IS NOT NULL AND target NOT LIKE '{%';
UPDATE operations SET target = json_object('v', 1, 'application', target)
 WHERE kind IN ('app-deploy', 'app-delete') AND target IS NOT NULL AND target NOT LIKE '{%';
UPDATE operations SET target = json_object('v', 1, 'addon', target)
 WHERE kind IN ('addon-apply', 'addon-remove') AND target IS NOT NULL AND target NOT LIKE '{%';
