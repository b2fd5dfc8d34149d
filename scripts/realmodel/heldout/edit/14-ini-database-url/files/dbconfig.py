"""Settings read from an INI file like app.ini."""
import configparser

DEFAULT_PORT = 5432


def server_address(path):
    """(host, port) from the [server] section of the INI file at path."""
    parser = configparser.ConfigParser()
    parser.read(path)
    return parser["server"]["host"], parser["server"].getint("port")


def database_url(path):
    """The URL of the database in the [database] section of the INI file at path."""
